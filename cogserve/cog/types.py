"""`cog.types`: the value types a model declares, and URLFile / URLPath.

URLFile is a file object that opens an http(s) URL only when first read (and survives
pickling as its URL); URLPath is a `pathlib.Path` (for isinstance checks) standing for a
URL whose bytes are fetched by `convert()`. Cog exports both; models import them for
type checks and to hand remote files on without downloading them first. Every model
imports this module, so the HTTP client and temp-file modules load only when used
(urllib.request alone would add ~20 ms to a worker's start).
"""

from __future__ import annotations

import io
import os
import pathlib
import sys
from typing import Any

from cogserve.types import (
    AsyncConcatenateIterator,
    ConcatenateIterator,
    File,
    Path,
    Secret,
)

__all__ = ["AsyncConcatenateIterator", "ConcatenateIterator", "File", "Path", "Secret",
           "URLFile", "URLPath"]


class URLFile(io.IOBase):
    """A read-only file object for an http(s) URL, opened on first use."""

    def __init__(self, url: str, filename: str | None = None) -> None:
        import urllib.parse

        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https"):
            raise ValueError("URLFile requires URL to conform to HTTP or HTTPS protocol")
        self.name = filename or os.path.basename(parsed.path)
        self.url = url
        self._response: Any = None

    def _target(self) -> Any:
        if self._response is None:
            import urllib.request

            self._response = urllib.request.urlopen(self.url)  # noqa: S310 - http(s) only
        return self._response

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        return bytes(self._target().read(size))

    def readinto(self, buffer: Any) -> int:
        return int(self._target().readinto(buffer))

    def close(self) -> None:
        if self._response is not None:
            self._response.close()
        super().close()

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name, "url": self.url}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.name = state["name"]
        self.url = state["url"]
        self._response = None

    def __repr__(self) -> str:
        return f"URLFile({self.url!r})"


class URLPath(pathlib.PosixPath):
    """A Path standing for a URL: `convert()` fetches it to a local temporary file."""

    def __new__(cls, *, source: str, filename: str, fileobj: io.IOBase) -> URLPath:
        return super().__new__(cls, filename)

    def __init__(self, *, source: str, filename: str, fileobj: io.IOBase) -> None:
        if sys.version_info >= (3, 12):
            super().__init__(filename)
        self.source = source
        self.filename = filename
        self.fileobj = fileobj
        self._path: Path | None = None

    def convert(self) -> Path:
        if self._path is None:
            import shutil
            import tempfile

            with tempfile.NamedTemporaryFile(suffix=self.filename, delete=False) as dest:
                shutil.copyfileobj(self.fileobj, dest)
            self._path = Path(dest.name)
        return self._path

    def unlink(self, missing_ok: bool = False) -> None:
        if self._path is not None:
            self._path.unlink(missing_ok=missing_ok)

    def __str__(self) -> str:
        return self.source
