"""Fetch file inputs (http, https, data: URLs) into a prediction's temporary folder
(s3:// and gs:// ones, with the s3 extra: `objects`).

Runs in the worker, so the model receives local paths. Uses the standard library only:
the worker should start fast and not import an HTTP client it rarely needs.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import mimetypes
import pathlib
import re
import socket
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from email.message import Message
from typing import Any

from cogserve.exceptions import FetchError
from cogserve.process import envvars, netpolicy
from cogserve.worker import dataurls
from cogserve.worker.transfers import StopReason, Transfers, current

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_CHUNK = 1 << 20


class DownloadStopped(FetchError):
    """A download ended by its Transfers (cancel or deadline); `reason` says which."""

    def __init__(self, message: str, reason: StopReason) -> None:
        super().__init__(message)
        self.reason = reason


class Fetcher:
    """A worker's downloads of file inputs: urllib's opener limited to http(s) under the
    URL policy it is given (built once), their limits (COGSERVE_DOWNLOAD_TIMEOUT,
    _MAX_BYTES and _DEADLINE, read once here, when the first file input builds it), and
    the tally of bytes fetched and downloads failed since the parent was last told (the
    parent owns the metrics, so a prediction's terminal frame carries it: `take_tally`).
    Threads of the download pool share it."""

    def __init__(self, policy: netpolicy.URLPolicy) -> None:
        self._opener = _http_only_opener(policy)
        self.timeout = envvars.download_timeout()  # seconds per socket operation
        self.max_bytes = envvars.download_max_bytes()  # 0: no limit
        self.deadline = envvars.download_deadline()  # for a prediction's Transfers clock
        self._tally = [0, 0]
        self._lock = threading.Lock()

    def take_tally(self) -> list[int] | None:
        """[bytes, failures] since the last call, or None when nothing was downloaded."""
        with self._lock:
            if self._tally == [0, 0]:
                return None
            taken = list(self._tally)
            self._tally[:] = [0, 0]
            return taken

    def _count(self, nbytes: int, failures: int) -> None:
        with self._lock:
            self._tally[0] += nbytes
            self._tally[1] += failures

    def fetch(self, url: str, dest: pathlib.Path, field: str, index: int | None = None,
              transfers: Transfers | None = None) -> pathlib.Path:
        """Download `url` into the folder `dest` and return the local path.

        At most COGSERVE_DOWNLOAD_MAX_BYTES (0: no limit) are written; `transfers` stops
        the download on cancel or deadline. A partial file is removed.
        """
        label = field if index is None else f"{field}[{index}]"
        if url.startswith("data:"):
            return dataurls.write(url, dest, label, index)
        scheme = urllib.parse.urlsplit(url).scheme.lower()
        bucket = scheme not in ("http", "https") and _bucket_url(url)
        if scheme not in ("http", "https") and not bucket:
            raise FetchError(
                f"input {label}: {_short(url)} is not an http, https or data URL; "
                "file inputs must be URLs"
            )
        spans = sys.modules.get("cogserve.process.spans")  # loaded: tracing is on
        with spans.child_span("download", **{"url.full": _short(url)}) if spans is not None \
                else contextlib.nullcontext():
            try:
                if bucket:
                    from cogserve.worker import objects

                    target = objects.download(
                        url, dataurls.unique(dest, _name_from_response(None, url, index)), label,
                        transfers or Transfers(), self.max_bytes, _stopped)
                else:
                    target = self._download(url, dest, label, index,
                                            transfers or Transfers())
            except BaseException:
                self._count(0, 1)
                raise
        self._count(target.stat().st_size, 0)
        return target

    def _download(self, url: str, dest: pathlib.Path, label: str, index: int | None,
                  owner: Transfers) -> pathlib.Path:
        current.transfers = owner
        target: pathlib.Path | None = None
        complete = False
        try:
            request = urllib.request.Request(url, headers={"User-Agent": "cogserve"})
            with self._opener.open(request, timeout=self.timeout) as response:
                _check_length(response, self.max_bytes, label, url)
                name = _name_from_response(response, url, index)
                target = dataurls.unique(dest, name)
                with open(target, "wb") as out:
                    _copy(response, out, owner, self.max_bytes, label, url)
                complete = True
                return target
        except urllib.error.HTTPError as exc:
            raise FetchError(f"input {label}: downloading {_short(url)} failed: HTTP "
                             f"{exc.code} {exc.reason}") from None
        except FetchError:
            raise
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            if owner.stopped is not None:
                raise _stopped(owner.stopped, label, url) from None
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            raise FetchError(f"input {label}: downloading {_short(url)} failed: {reason}"
                             ) from None
        finally:
            current.transfers = None
            if target is not None and not complete:
                target.unlink(missing_ok=True)  # a partial file frees its space at once


def _check_length(response: Any, max_bytes: int, label: str, url: str) -> None:
    length = response.headers.get("Content-Length", "")
    if max_bytes and length.isdigit() and int(length) > max_bytes:
        raise FetchError(f"input {label}: {_short(url)} is {int(length)} bytes; the limit is "
                         f"{max_bytes} (COGSERVE_DOWNLOAD_MAX_BYTES)")


def _copy(response: Any, out: Any, transfers: Transfers, max_bytes: int, label: str,
          url: str) -> None:
    """Copy as bytes arrive (read1: one recv at a time), checking limits between them."""
    size = 0
    while True:
        chunk = response.read1(_CHUNK)
        if transfers.stopped is not None:
            raise _stopped(transfers.stopped, label, url)
        if not chunk:
            return
        size += len(chunk)
        if max_bytes and size > max_bytes:
            raise FetchError(f"input {label}: {_short(url)} exceeds the limit of "
                             f"{max_bytes} bytes (COGSERVE_DOWNLOAD_MAX_BYTES)")
        out.write(chunk)


def _stopped(reason: StopReason, label: str, url: str) -> DownloadStopped:
    return DownloadStopped(f"input {label}: downloading {_short(url)} stopped: {reason.value}",
                           reason)


_DEFAULT_TIMEOUT: Any = socket._GLOBAL_DEFAULT_TIMEOUT  # type: ignore[attr-defined]


def _connect(address: tuple[str, int], timeout: Any = _DEFAULT_TIMEOUT,
             source_address: tuple[str, int] | None = None, *,
             policy: netpolicy.URLPolicy) -> socket.socket:
    """Connect as http.client does, to an address `policy` allows (after resolution, for
    every request and redirect), registered with this download's Transfers so that a
    cancel can shut it."""
    sock = netpolicy.create_connection(
        address, None if timeout is _DEFAULT_TIMEOUT else timeout,
        source_address, policy=policy)
    owner: Transfers | None = getattr(current, "transfers", None)
    if owner is not None:
        owner.add(sock)
    return sock


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args: Any, policy: netpolicy.URLPolicy, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # http.client sets it per instance
        self._create_connection = functools.partial(_connect, policy=policy)


class _HTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args: Any, policy: netpolicy.URLPolicy, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = functools.partial(_connect, policy=policy)


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, policy: netpolicy.URLPolicy) -> None:
        super().__init__()
        self._policy = policy

    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(functools.partial(_HTTPConnection, policy=self._policy), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, policy: netpolicy.URLPolicy) -> None:
        super().__init__()
        self._policy = policy

    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(functools.partial(_HTTPSConnection, policy=self._policy), req,
                            context=self._context)  # type: ignore[attr-defined]


def _http_only_opener(policy: netpolicy.URLPolicy) -> urllib.request.OpenerDirector:
    """urllib's opener without its file: and ftp: handlers, so a redirect cannot reach
    them, and with connections that apply `policy`."""
    opener = urllib.request.OpenerDirector()
    for handler in (urllib.request.ProxyHandler(), urllib.request.UnknownHandler(),
                    _HTTPHandler(policy), _HTTPSHandler(policy),
                    urllib.request.HTTPDefaultErrorHandler(),
                    urllib.request.HTTPRedirectHandler(),
                    urllib.request.HTTPErrorProcessor()):
        opener.add_handler(handler)
    return opener


def _bucket_url(url: str) -> bool:
    from cogserve import buckets  # only for a URL that is not http(s) or data:

    return buckets.accepts(url)


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


def _short(url: str) -> str:
    return url if len(url) <= 100 else url[:97] + "..."
