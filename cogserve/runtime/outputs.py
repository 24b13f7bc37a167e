"""Turn the worker's file markers into what the client receives: data or upload URLs.

The worker reports a file by path (`{"__cogserve_file__": path}`); here it becomes a
base64 `data:` URL, or is uploaded with `PUT` multipart/form-data to the prediction's
`output_file_prefix` or the server's `--upload-url`, and replaced by the URL.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import pathlib
import shutil
from typing import Any

FILE_KEY = "__cogserve_file__"
SPILL_PREFIX = "cogserve-out-"


def has_files(message: dict[str, Any]) -> bool:
    return bool(message.get("files"))


async def resolve_files(value: Any, prediction: Any, upload_url: str | None) -> Any:
    """Replace every file marker in `value` (recursively)."""
    if isinstance(value, dict):
        if FILE_KEY in value and len(value) == 1:
            return await _resolve_one(value[FILE_KEY], prediction, upload_url)
        return {k: await resolve_files(v, prediction, upload_url) for k, v in value.items()}
    if isinstance(value, list):
        return [await resolve_files(v, prediction, upload_url) for v in value]
    return value


def mime_type(path: str) -> str:
    guessed, _ = mimetypes.guess_type(path)
    return guessed or "application/octet-stream"


async def _resolve_one(path: str, prediction: Any, upload_url: str | None) -> str:
    prefix = getattr(prediction, "output_file_prefix", None) or upload_url
    try:
        if prefix:
            from cogserve.runtime.uploads import upload_file

            return await upload_file(path, prefix)
        return data_url(path)
    finally:
        _discard_spilled(path)


def _discard_spilled(path: str) -> None:
    """Remove a file the worker wrote for a file-like output (and its folder)."""
    folder = pathlib.Path(path).parent
    if folder.name.startswith(SPILL_PREFIX):
        shutil.rmtree(folder, ignore_errors=True)


def data_url(path: str) -> str:
    """Encode a file as a data URL, reading it once and encoding without extra copies."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        raw = fh.read(size)
    encoded = base64.b64encode(raw)
    del raw
    return "data:" + mime_type(pathlib.Path(path).name) + ";base64," + encoded.decode("ascii")
