"""The prediction store as the facade sees it: one object, whatever `--store` chose.

In front, in memory, the cache of recently finished predictions (`cache.py`): a retried
PUT, a cancel or a GET of an id that finished here a moment ago is answered from it,
with the very bytes the client got. Behind it, the durable backend of `--store` (SQLite
or Redis, through the writer thread of `durable.py`), or nothing for `memory`. `Store`
answers the stored half of `Service.lookup` (`runtime/found.py`), writes what Cog's
routes accept asynchronously, and lists; a backend's `StoreError` leaves it as the
`StoreUnavailable` refusal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogserve.runtime.errors import StoreError, StoreUnavailable
from cogserve.runtime.found import UNKNOWN, Evicted, Found, Stored
from cogserve.runtime.prediction import Prediction
from cogserve.runtime.request import PredictionRequest
from cogserve.runtime.store import listing
from cogserve.runtime.store.cache import RecentCache
from cogserve.runtime.store.interface import Page, Stage
from cogserve.runtime.store.recovery import KEPT_REQUEST_BYTES, encode_request

if TYPE_CHECKING:
    from collections.abc import Iterable

    from cogserve.runtime.store.durable import Durable


class Store:
    def __init__(self, recent_count: int, recent_bytes: int, durable: Durable | None) -> None:
        self.cache = RecentCache(recent_count, recent_bytes)
        self.durable = durable  # None: `--store memory`, the cache alone

    def remember(self, prediction: Prediction) -> None:
        """Keep `prediction` once it finished (subscribed last: on `completed` its SSE
        history is complete), in the cache and the durable store."""
        prediction.subscribe(self.cache.listener)
        if self.durable is not None:
            prediction.subscribe(self.durable.listener)

    @property
    def failure(self) -> str | None:
        """Why the durable store cannot be written now (None: it can, or there is none)."""
        return self.durable.failure if self.durable is not None else None

    def check_writable(self) -> None:
        """Raise StoreUnavailable while the durable store fails (an async request must
        not be accepted unrecorded)."""
        failure = self.failure
        if failure is not None:
            raise StoreUnavailable(failure)

    def holds(self, prediction_id: str) -> bool:
        return self.cache.holds(prediction_id)

    async def find(self, prediction_id: str, kind: str, evictions: bool) -> Found:
        """What is kept of an id no worker holds: finished here, stored (before a
        restart, or by a replica), evicted (only if `evictions`), or unknown."""
        cache = self.cache
        finished = cache.get(prediction_id, kind)
        if finished is not None:
            return finished
        durable = self.durable
        evicted_here = cache.was_evicted(prediction_id)
        try:
            # evicted here: the store's copy (batched) goes the same way
            if durable is not None and not evicted_here:
                record = await durable.get(prediction_id)
                if record is not None and record.kind == kind:
                    return Stored(record.body, record.status, record.stage is Stage.FINISHED)
            if not evictions:
                return UNKNOWN
            if evicted_here:
                return Evicted(cache.describe_bounds())
            if durable is not None and await durable.was_evicted(prediction_id):
                return Evicted(durable.describe_bounds())
        except StoreError as exc:
            raise StoreUnavailable(str(exc)) from None
        return UNKNOWN

    async def accept(self, prediction: Prediction, request: PredictionRequest,
                     size: int) -> bytes | None:
        """Write an async prediction before it is answered; the body recorded (None
        without a durable store). `size`: its request body's bytes (an input over
        KEPT_REQUEST_BYTES is not kept to run it again)."""
        durable = self.durable
        if durable is None:
            return None
        try:
            return await durable.accept(
                prediction, encode_request(request, size <= KEPT_REQUEST_BYTES))
        except StoreError as exc:
            raise StoreUnavailable(str(exc)) from None

    async def page(self, running: Iterable[Prediction], kind: str, status: str | None,
                   limit: int, cursor: str | None) -> Page:
        try:
            return await listing.page(self.durable, running, self.cache, kind, status, limit,
                                      cursor)
        except StoreError as exc:
            raise StoreUnavailable(str(exc)) from None

    async def close(self) -> None:
        if self.durable is not None:
            await self.durable.close()
