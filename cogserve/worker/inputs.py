"""Turn a validated JSON input into the Python values run() receives.

The parent already checked types and constraints; here JSON becomes Path, Secret,
file handles and floats, and defaults fill what the client left out.
"""

from __future__ import annotations

import pathlib
import threading
from typing import TYPE_CHECKING, Any, Protocol

from cogserve.model.specs import InputSpec, Signature, TypeKind, TypeSpec
from cogserve.sdk.runner import MISSING
from cogserve.sdk.types import Path, Secret

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from cogserve.worker.files import Fetcher
    from cogserve.worker.transfers import Transfers

_URL_SCHEMES = ("http://", "https://", "data:")


class Downloads:
    """One worker's downloads of file inputs, made where it starts serving. What they
    need (8 download threads; urllib, http.client and ssl: ~10 ms of worker start) is
    built on the first file input, so a model that never gets one never pays for it."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._fetcher: Fetcher | None = None
        # built once though two threads may ask at once (a sync @batch worker prepares on
        # its read-ahead thread, a training on the main thread)
        self._building = threading.Lock()

    def start(self) -> tuple[ThreadPoolExecutor, Fetcher]:
        """The download threads and the fetcher, built on first use."""
        with self._building:
            if self._pool is None or self._fetcher is None:
                from concurrent.futures import ThreadPoolExecutor

                from cogserve.process.netpolicy import URLPolicy
                from cogserve.worker.files import Fetcher

                self._fetcher = Fetcher(URLPolicy.from_env())  # COGSERVE_URL_POLICY, once
                self._pool = ThreadPoolExecutor(max_workers=8,
                                                thread_name_prefix="cogserve-fetch")
            return self._pool, self._fetcher

    def take_tally(self) -> list[int] | None:
        """[bytes, failures] downloaded since the parent was last told, or None."""
        return self._fetcher.take_tally() if self._fetcher is not None else None


class Destination(Protocol):
    """Where one prediction's file inputs go (`predict.Job`).

    Its folders are made on first use (`tmpdir()`, `memdir()`): most predictions have no
    file input, and a folder per prediction would dominate a no-op run.
    `new_transfers()` makes the prediction's Transfers (what a cancel stops); a download
    stopped by a cancel raises CancelationException, so the prediction ends canceled.
    """

    opened: list[Any]  # File inputs' open handles, closed when the prediction ends
    downloads: Downloads

    def tmpdir(self) -> pathlib.Path:
        """The prediction's folder on disk: downloads go there."""

    def memdir(self) -> pathlib.Path | None:
        """Its folder in memory, for data: URL inputs; None where there is none."""

    def new_transfers(self) -> Transfers: ...


def prepare(sig: Signature, raw: dict[str, Any], dest: Destination) -> dict[str, Any]:
    """Build run()'s keyword arguments; file inputs are fetched in parallel into `dest`."""
    kwargs: dict[str, Any] = {}
    jobs: list[tuple[str, int | None, Any]] = []
    for spec in sig.inputs:
        if spec.name in raw:
            value = raw[spec.name]
        elif spec.factory is not None:
            value = spec.factory()  # a new one for each prediction
        else:
            value = None if spec.default is MISSING else spec.default
            if not isinstance(value, str | int | float | bool | list | type(None)):
                kwargs[spec.name] = value  # a typed default (Path, Secret...) is used as is
                continue
        kwargs[spec.name] = _convert(spec, spec.type, value, jobs)
    if jobs:
        _fetch_files(kwargs, jobs, dest)
    return kwargs


def _fetch_files(kwargs: dict[str, Any], jobs: list[tuple[str, int | None, Any]],
                 dest: Destination) -> None:
    """Put each file input into `dest`'s folders and its Path (or open file) into `kwargs`.

    A data URL is written here, in the calling thread; only http(s) URLs go to the
    download threads, and only they make the prediction's Transfers (with its deadline
    timer, a thread) and load urllib (~10 ms of worker start). Errors are reported
    together, in the inputs' order.
    """
    from cogserve.exceptions import FetchError
    from cogserve.worker import dataurls

    done: list[tuple[str, int | None, Any, Any]] = []  # name, index, kind, path or future
    remote = [job for job in jobs if not job[2][1].startswith("data:")]
    if remote:
        import contextvars

        owner = dest.new_transfers()
        pool, fetcher = dest.downloads.start()
        owner.start_clock(fetcher.deadline)
        folder = dest.tmpdir()
    errors = []
    for name, index, (kind, url) in jobs:
        if url.startswith("data:"):
            label = name if index is None else f"{name}[{index}]"
            try:  # in memory where the worker has a folder there; on disk otherwise
                done.append((name, index, kind, dataurls.write(
                    url, dest.memdir() or dest.tmpdir(), label, index, spare=dest.tmpdir)))
            except FetchError as exc:
                errors.append(str(exc))
        else:  # in a copy of this context, so a download's span has its parent
            done.append((name, index, kind, pool.submit(
                contextvars.copy_context().run, fetcher.fetch, url, folder, name, index,
                owner)))
    results = []
    for name, index, kind, got in done:
        if isinstance(got, pathlib.Path):
            results.append((name, index, kind, got))
            continue
        try:
            results.append((name, index, kind, got.result()))
        except Exception as exc:  # noqa: BLE001 - reported per input
            errors.append(str(exc))
    if remote:
        from cogserve.exceptions import CancelationException
        from cogserve.worker.transfers import StopReason

        owner.finish()
        if owner.stopped is StopReason.CANCEL:
            raise CancelationException()
    if errors:
        raise FetchError("; ".join(errors))
    for name, index, kind, path in results:
        value: Any = Path(path)
        if kind == TypeKind.FILE:
            handle = open(path, "rb")  # noqa: SIM115 - closed when the prediction ends
            dest.opened.append(handle)
            value = handle
        if index is None:
            kwargs[name] = value
        else:
            kwargs[name][index] = value


def _convert(spec: InputSpec, t: TypeSpec, value: Any, jobs: list[Any],
             index: int | None = None) -> Any:
    if value is None:
        return None
    kind = t.kind
    if kind == TypeKind.FLOAT:
        return float(value)
    if kind == TypeKind.INT:
        return int(value)  # the schema allows 2.0 for an integer; run() gets 2
    if kind == TypeKind.SECRET:
        return Secret(value)
    if kind in (TypeKind.PATH, TypeKind.FILE):
        if isinstance(value, pathlib.Path):
            return value
        if kind == TypeKind.PATH and not value.startswith(_URL_SCHEMES) \
                and not _bucket_url(value):
            return Path(value)  # a local default: requests were validated as URLs
        jobs.append((spec.name, index, (kind, value)))
        return value
    if kind == TypeKind.LIST and t.item is not None:
        return [_convert(spec, t.item, v, jobs, i) for i, v in enumerate(value)]
    if kind == TypeKind.TENSOR:
        # numpy: only for models that declare tensors
        from cogserve.worker.tensors import to_array

        return to_array(value, t.tensor, spec.name)
    return value  # a union's value too: a JSON integer for `str | float` stays an int (Cog's)


def _bucket_url(value: str) -> bool:
    """s3:// or gs:// with the s3 extra: fetched (`files`, `objects`) like an http URL."""
    from cogserve import buckets

    return buckets.accepts(value)
