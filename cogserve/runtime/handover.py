"""Files between the processes, the parent's side.

What does not fit in a frame crosses as a file in the server's folder
(`Service.tmp_root`, the worker's TMPDIR): an input document over
`protocol.INPUT_SPILL_THRESHOLD`, a packed tensor over `protocol.TENSOR_FILE_THRESHOLD`
(both written here, read and removed by the worker: `cogserve.worker.handover`), and
file outputs, which the worker writes and the parent removes here once they are sent.
"""

from __future__ import annotations

import mimetypes
import os
import pathlib
import shutil
import tempfile
from collections.abc import Collection
from typing import Any

import orjson

from cogserve.wire import jsoncodec, protocol


def mime_type(path: str) -> str:
    guessed, _ = mimetypes.guess_type(path)
    return guessed or "application/octet-stream"


def spill_input(message: protocol.Message, folder: str) -> None:
    """Send a PREDICT message's input as a file when it is over the threshold."""
    raw = message["input"]
    # cheap pre-check: only serialise to measure when some value could be large
    if not any(isinstance(v, str) and len(v) > 65536 or isinstance(v, list | dict)
               for v in raw.values()):
        return
    body = jsoncodec.dumps_text(raw) if jsoncodec.long_text(raw.values()) else orjson.dumps(raw)
    if len(body) <= protocol.INPUT_SPILL_THRESHOLD:
        return
    fd, path = tempfile.mkstemp(prefix=protocol.INPUT_SPILL_PREFIX, suffix=".json", dir=folder)
    with os.fdopen(fd, "wb") as fh:
        fh.write(body)
    protocol.spill_input(message, path)


def spill_tensor(raw: bytes | memoryview, folder: str) -> str:
    """Write a packed tensor's bytes to a file the worker reads and removes."""
    fd, path = tempfile.mkstemp(prefix=protocol.TENSOR_SPILL_PREFIX, dir=folder)
    with os.fdopen(fd, "wb") as fh:
        fh.write(raw)
    return path


def discard_spilled_output(path: str) -> None:
    """Remove a file the worker wrote for a file-like output (and its folder)."""
    folder = pathlib.Path(path).parent
    if folder.name.startswith(protocol.OUTPUT_SPILL_PREFIX):
        shutil.rmtree(folder, ignore_errors=True)


def discard_folder(message: protocol.Message, roots: Collection[str]) -> None:
    """Remove the prediction folders the worker handed over once their files were sent
    (only ever folders inside a worker's own, `roots`)."""
    folders: Any = message.get("tmpdir")
    if not isinstance(folders, list):
        return
    for folder in folders:
        if isinstance(folder, str) and os.path.dirname(os.path.abspath(folder)) in roots:
            shutil.rmtree(folder, ignore_errors=True)
