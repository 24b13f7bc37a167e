"""Files between the processes, the worker's side (the parent's is
`cogserve.runtime.handover`).

The worker reads and removes what the parent spilled (an input document, a packed
tensor) and writes file-like outputs to files the parent sends and then removes.
Standard library only: every worker imports this.
"""

from __future__ import annotations

import io
import os
import pathlib
import shutil
import tempfile
from typing import Any

from cogserve.wire import jsoncodec, protocol


def read_input(message: protocol.Message) -> dict[str, Any]:
    """A PREDICT message's input, from its spill file (removed once read) if it has one."""
    spill = message.get(protocol.INPUT_FILE)
    if spill:
        try:
            with open(spill, "rb") as fh:
                document: dict[str, Any] = jsoncodec.loads(fh.read())
                return document
        finally:
            remove(spill)
    return message.get("input") or {}


def spilled_tensor(path: str) -> pathlib.Path:
    """A packed tensor's spill file; only ever one the parent wrote in its server folder."""
    where = pathlib.Path(path)
    if not (where.name.startswith(protocol.TENSOR_SPILL_PREFIX)
            and where.parent.name.startswith(protocol.SERVER_DIR_PREFIX)):
        raise ValueError(f"refusing to read tensor data from {path!r}")
    return where


def remove(path: str | os.PathLike[str]) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def spill_output(handle: Any) -> str:
    """Write a file-like output to its own folder (inside the prediction's folder, which
    `tempdirs` makes tempfile's default); the parent removes both once sent."""
    folder = tempfile.mkdtemp(prefix=protocol.OUTPUT_SPILL_PREFIX)
    name = pathlib.Path(str(getattr(handle, "name", "") or "output")).name or "output"
    target = pathlib.Path(folder) / name
    with open(target, "wb") as out:
        if hasattr(handle, "seek"):
            try:
                handle.seek(0)
            except (OSError, io.UnsupportedOperation):
                pass
        shutil.copyfileobj(handle, out)
    return str(target)
