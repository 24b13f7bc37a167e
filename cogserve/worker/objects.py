"""Fetch `s3://` and `gs://` file inputs (object storage, `cogserve/buckets.py`) into a
prediction's folder, as `files.Fetcher` fetches http(s) ones: under the same limits
(COGSERVE_DOWNLOAD_MAX_BYTES, _TIMEOUT per connect and read, _DEADLINE for all of a
prediction's downloads, checked between chunks), with the same messages, and a partial
file removed. A missing object or a refused read is a `FetchError` naming the object and
the store's error: the prediction fails, the worker goes on.

Imported on the first bucket URL only; obstore (the `s3` extra) with it.
"""

from __future__ import annotations

import pathlib
import threading
from collections.abc import Callable

from cogserve import buckets
from cogserve.exceptions import FetchError
from cogserve.process import envvars
from cogserve.worker.transfers import StopReason, Transfers

_CHUNK = 1 << 20
_stores: buckets.Stores | None = None
_lock = threading.Lock()


def _open_stores() -> buckets.Stores:
    global _stores
    with _lock:
        if _stores is None:
            _stores = buckets.Stores(envvars.download_timeout(), envvars.download_deadline())
        return _stores


def download(url: str, target: pathlib.Path, label: str, owner: Transfers, max_bytes: int,
             stopped: Callable[[StopReason, str, str], FetchError]) -> pathlib.Path:
    """Stream the object `url` names into the file `target` (named by `files`, as an
    http download's file is); `stopped` makes the error of a download `owner` stopped."""
    try:
        where = buckets.ObjectURL.parse(url)
    except ValueError as exc:
        raise FetchError(f"input {label}: {exc}") from None
    store = _open_stores().store(where)
    import obstore

    complete = False
    try:
        result = obstore.get(store, where.key)
        size = result.meta["size"]
        if max_bytes and size > max_bytes:
            raise FetchError(f"input {label}: {url} is {size} bytes; the limit is "
                             f"{max_bytes} (COGSERVE_DOWNLOAD_MAX_BYTES)")
        written = 0
        with open(target, "wb") as out:
            for chunk in result.stream(min_chunk_size=_CHUNK):
                if owner.stopped is not None:
                    raise stopped(owner.stopped, label, url)
                written += len(chunk)
                if max_bytes and written > max_bytes:
                    raise FetchError(f"input {label}: {url} exceeds the limit of "
                                     f"{max_bytes} bytes (COGSERVE_DOWNLOAD_MAX_BYTES)")
                out.write(chunk)
        if owner.stopped is not None:
            raise stopped(owner.stopped, label, url)
        complete = True
        return target
    except FetchError:
        raise
    except Exception as exc:  # the store's errors: not found, denied, unreachable, ...
        if owner.stopped is not None:
            raise stopped(owner.stopped, label, url) from None
        what = buckets.kind(exc)
        raise FetchError(f"input {label}: reading {url} failed: "
                         f"{what + ': ' if what else ''}{buckets.describe(exc)}") from None
    finally:
        if not complete:
            target.unlink(missing_ok=True)
