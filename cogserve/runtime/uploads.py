"""Upload a file output with PUT multipart/form-data and return the URL it is served at.

The multipart body is streamed from the file in 1 MiB chunks with a known
Content-Length, so a large output is never read into memory; httpx2's own multipart
encoder writes 64 KiB pieces, which made a 50 MiB upload twice as slow as the
reference (bench scenario 5b).
"""

from __future__ import annotations

import os
import secrets
import urllib.parse
from collections.abc import AsyncIterator

import httpx2

from cogserve.runtime import transport
from cogserve.runtime.handover import mime_type
from cogserve.runtime.resolver import Resolver


class UploadError(RuntimeError):
    """An output file could not be uploaded; the message says where and why."""


class Uploader:
    """Uploads a server's file outputs through one HTTP client (its connections reused),
    made on the first upload so a server that never uploads never builds it; names
    resolve with the server's `resolver`, so the URL policy applies."""

    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver
        self._client: httpx2.AsyncClient | None = None

    def _http(self) -> httpx2.AsyncClient:
        if self._client is None:
            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(60.0, connect=10.0),
                transport=transport.transport(self.resolver),
                headers={"User-Agent": _user_agent()})
        return self._client

    async def upload(self, path: str, prefix: str, name: str,
                     headers: dict[str, str] | None = None) -> str:
        """PUT `path` as `name` under `prefix`; the receiver's Location wins over prefix +
        name. `headers`: extra ones to send (the trace context)."""
        url = prefix if prefix.endswith("/") else prefix + "/"
        try:
            with open(path, "rb") as fh:
                boundary = secrets.token_hex(16)
                head, tail = _multipart_frame(boundary, name)
                size = len(head) + os.fstat(fh.fileno()).st_size + len(tail)
                response = await self._http().put(
                    url,
                    content=_body(fh, head, tail),
                    headers={**(headers or {}),
                             "Content-Type": f"multipart/form-data; boundary={boundary}",
                             "Content-Length": str(size)},
                )
        except httpx2.HTTPError as exc:
            raise UploadError(f"uploading {name} to {url} failed: {type(exc).__name__}: "
                              f"{exc or 'no answer'}") from None
        if response.status_code >= 400:
            raise UploadError(f"uploading {name} to {url} failed: HTTP "
                              f"{response.status_code}")
        location = response.headers.get("location")
        if location:
            return str(response.url.join(location))
        return url + urllib.parse.quote(name)


def _user_agent() -> str:
    import cogserve

    return f"cogserve/{cogserve.__version__}"


CHUNK = 1 << 20


def _multipart_frame(boundary: str, name: str) -> tuple[bytes, bytes]:
    quoted = name.replace("\\", "\\\\").replace('"', '\\"')
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="file"; filename="{quoted}"\r\n'
        f"Content-Type: {mime_type(name)}\r\n\r\n"
    ).encode()
    return head, f"\r\n--{boundary}--\r\n".encode()


async def _body(fh: object, head: bytes, tail: bytes) -> AsyncIterator[bytes]:
    yield head
    read = fh.read  # type: ignore[attr-defined]
    while chunk := read(CHUNK):
        yield chunk
    yield tail
