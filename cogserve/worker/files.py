"""Fetch file inputs (http, https, data: URLs) into a prediction's temporary folder.

Runs in the worker, so the model receives local paths. Uses the standard library only:
the worker should start fast and not import an HTTP client it rarely needs.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import os
import pathlib
import re
import shutil
import urllib.error
import urllib.parse
import urllib.request
from email.message import Message

from cogserve.exceptions import FetchError

DOWNLOAD_TIMEOUT = float(os.environ.get("COGSERVE_DOWNLOAD_TIMEOUT", "60"))
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def fetch(url: str, dest: pathlib.Path, field: str, index: int | None = None) -> pathlib.Path:
    """Download `url` into the folder `dest` and return the local path."""
    label = field if index is None else f"{field}[{index}]"
    if url.startswith("data:"):
        return _fetch_data_url(url, dest, label, index)
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise FetchError(
            f"input {label}: {_short(url)} is not an http, https or data URL; "
            "file inputs must be URLs"
        )
    try:
        request = urllib.request.Request(url, headers={"User-Agent": "cogserve"})
        with _opener().open(request, timeout=DOWNLOAD_TIMEOUT) as response:
            name = _name_from_response(response, url, index)
            target = _unique(dest, name)
            with open(target, "wb") as out:
                shutil.copyfileobj(response, out, 1 << 20)
            return target
    except urllib.error.HTTPError as exc:
        raise FetchError(f"input {label}: downloading {_short(url)} failed: HTTP {exc.code} "
                         f"{exc.reason}") from None
    except urllib.error.URLError as exc:
        raise FetchError(f"input {label}: downloading {_short(url)} failed: {exc.reason}") from None
    except (TimeoutError, OSError) as exc:
        raise FetchError(f"input {label}: downloading {_short(url)} failed: {exc}") from None


_http_only: urllib.request.OpenerDirector | None = None


def _opener() -> urllib.request.OpenerDirector:
    """urllib's opener without its file: and ftp: handlers, so a redirect cannot reach them."""
    global _http_only
    if _http_only is None:
        opener = urllib.request.OpenerDirector()
        for handler in (urllib.request.ProxyHandler(), urllib.request.UnknownHandler(),
                        urllib.request.HTTPHandler(), urllib.request.HTTPSHandler(),
                        urllib.request.HTTPDefaultErrorHandler(),
                        urllib.request.HTTPRedirectHandler(),
                        urllib.request.HTTPErrorProcessor()):
            opener.add_handler(handler)
        _http_only = opener
    return _http_only


def _fetch_data_url(url: str, dest: pathlib.Path, label: str, index: int | None) -> pathlib.Path:
    header, sep, payload = url[5:].partition(",")
    if not sep:
        raise FetchError(f"input {label}: malformed data URL (no comma)")
    parts = header.split(";")
    mime = parts[0] or "text/plain"
    try:
        if "base64" in parts[1:]:
            data = base64.b64decode(payload, validate=True)
        else:
            data = urllib.parse.unquote_to_bytes(payload)
    except (binascii.Error, ValueError) as exc:
        raise FetchError(f"input {label}: malformed data URL: {exc}") from None
    ext = mimetypes.guess_extension(mime) or ""
    target = _unique(dest, (f"input.{index}" if index is not None else "input") + ext)
    target.write_bytes(data)
    return target


def _name_from_response(response: object, url: str, index: int | None) -> str:
    headers = getattr(response, "headers", None)
    name = ""
    if headers is not None:
        disposition = headers.get("Content-Disposition")
        if disposition:
            msg = Message()
            msg["content-disposition"] = disposition
            name = msg.get_filename() or ""
    if not name:
        name = pathlib.PurePosixPath(urllib.parse.unquote(urllib.parse.urlsplit(url).path)).name
    name = _SAFE.sub("_", pathlib.PurePosixPath(name).name).strip("._")
    if not name or not pathlib.PurePosixPath(name).suffix:
        ctype = headers.get_content_type() if headers is not None else ""
        ext = mimetypes.guess_extension(ctype) or "" if ctype else ""
        base = name or (f"input.{index}" if index is not None else "input")
        name = base + ext
    return name


def _unique(dest: pathlib.Path, name: str) -> pathlib.Path:
    target = dest / name
    n = 1
    while target.exists():
        stem, suffix = os.path.splitext(name)
        target = dest / f"{stem}.{n}{suffix}"
        n += 1
    return target


def _short(url: str) -> str:
    return url if len(url) <= 100 else url[:97] + "..."
