"""Upload a file output with PUT multipart/form-data and return the URL it is served at.

httpx streams a multipart file field from the open file in small chunks (with a
Content-Length from its size), so a large output is never read into memory.
"""

from __future__ import annotations

import urllib.parse

import httpx

from cogserve.runtime.outputs import mime_type

_client: httpx.AsyncClient | None = None


class UploadError(RuntimeError):
    """An output file could not be uploaded; the message says where and why."""


def client() -> httpx.AsyncClient:
    global _client
    if _client is None:
        _client = httpx.AsyncClient(timeout=httpx.Timeout(60.0, connect=10.0),
                                    headers={"User-Agent": _user_agent()})
    return _client


def _user_agent() -> str:
    import cogserve

    return f"cogserve/{cogserve.__version__}"


async def upload_file(path: str, prefix: str, name: str) -> str:
    """PUT `path` as `name` under `prefix`; the receiver's Location wins over prefix + name."""
    url = prefix if prefix.endswith("/") else prefix + "/"
    try:
        with open(path, "rb") as fh:
            response = await client().put(url, files={"file": (name, fh, mime_type(name))})
    except httpx.HTTPError as exc:
        raise UploadError(f"uploading {name} to {url} failed: {type(exc).__name__}: "
                          f"{exc or 'no answer'}") from None
    if response.status_code >= 400:
        raise UploadError(f"uploading {name} to {url} failed: HTTP {response.status_code}")
    location = response.headers.get("location")
    if location:
        return str(response.url.join(location))
    return url + urllib.parse.quote(name)
