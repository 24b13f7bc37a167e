"""Upload a file output with PUT multipart/form-data and return the URL it is served at."""

from __future__ import annotations

import pathlib

import httpx

from cogserve.runtime.outputs import mime_type

_client: httpx.AsyncClient | None = None


def client() -> httpx.AsyncClient:
    global _client
    if _client is None:
        _client = httpx.AsyncClient(timeout=httpx.Timeout(60.0, connect=10.0),
                                    headers={"User-Agent": _user_agent()})
    return _client


def _user_agent() -> str:
    import cogserve

    return f"cogserve/{cogserve.__version__}"


async def upload_file(path: str, prefix: str) -> str:
    name = pathlib.Path(path).name
    url = prefix if prefix.endswith("/") else prefix + "/"
    with open(path, "rb") as fh:
        response = await client().put(
            url, files={"file": (name, fh, mime_type(name))}
        )
    if response.status_code >= 400:
        raise RuntimeError(f"uploading {name} to {url} failed: HTTP {response.status_code}")
    location = response.headers.get("location")
    if location:
        return location
    return url + name
