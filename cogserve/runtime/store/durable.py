"""The server's side of the durable store: one writer thread, and what it is told.

`Durable` owns the `PredictionStore` of `--store` (records.py) while the server runs:

- **Writes** go through one thread, in the order they were made, so a prediction's
  record and its webhook deliveries are never reordered. Whatever queued up while the
  thread wrote is written next as one batch (one transaction).
- **Async ones** (a webhook, or `Prefer: respond-async`) are `accept`ed: the route
  awaits their record before it answers `202`, and each change of stage (queued,
  running, finished) is written when it happens.
- **Sync ones** cost the event loop a tuple (its id, kind, status, creation time and
  final JSON, all made already; the prediction itself is not kept): they are collected
  and handed to the thread as one `interface.FinishedBatch` every `SYNC_FLUSH` seconds (or
  `SYNC_BATCH` of them), so a crash may lose the last few of them, whose clients
  already have their answers, and never an accepted async one. The backend writes a
  batch in a few calls (`runtime/store/sqlite_finished.py`).
- **The outbox** (`Outbox`, used by `runtime/webhooks.py`): a delivery is written
  before it is sent and removed once made (or given up on), so deliveries pending at a
  crash are sent after the restart: at least once, in order per prediction.
- **Reads** (`GET`, retried `PUT`s, listing) run in asyncio's thread pool.
- **Failure**: a write or lease renewal that fails sets `failure` (the server reports
  UNHEALTHY with it) and is retried, with the writes kept, until the store answers.
  Meanwhile async requests are refused (503) and finished sync ones are not recorded,
  so what is kept stays bounded by what was in flight.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from cogserve.runtime.errors import StoreError
from cogserve.runtime.prediction import Prediction
from cogserve.runtime.store.interface import (
    Bounds,
    Claimed,
    Dropped,
    FinishedBatch,
    Hook,
    HookDone,
    Page,
    PredictionStore,
    Record,
    Row,
    Stage,
    Write,
)
from cogserve.wire.states import Event

log = logging.getLogger("cogserve")

# Finished sync predictions are written at most this late (seconds), or once SYNC_BATCH
# of them wait. Their clients have their answers, and this server answers GETs of them
# from memory (`runtime/store/cache.py`), so with a store of its own only a crash sees the
# delay; a batch's cost is mostly per batch at low rates, where a short flush would
# make each prediction pay for a whole commit. Replicas sharing a store GET each
# other's predictions from it: for them the delay is short.
SYNC_FLUSH = 1.0
SYNC_FLUSH_SHARED = 0.05
SYNC_BATCH = 256  # ... so a write and the memory it holds stay small whatever the rate
RETRY_MIN, RETRY_MAX = 0.1, 2.0  # seconds between tries while the store fails

_Waiter = concurrent.futures.Future[None]
# the listener's events, looked up once: `Event.X` goes through EnumType.__getattr__'s
# slot, ~1,200 instructions per lookup, three per prediction
_COMPLETED, _START = Event.COMPLETED, Event.START


class Durable:
    def __init__(self, store: PredictionStore, bounds: Bounds, lease: float = 10.0) -> None:
        self.store = store
        self.bounds = bounds
        self.lease = lease  # seconds a shared store's owner stays alive without a heartbeat
        self.owner = uuid.uuid4().hex  # this server, in a shared store
        self.failure: str | None = None  # why the store cannot be used now (health)
        self._tracked: set[str] = set()  # accepted async ones: each change is written
        self._sync: list[Row] = []  # finished sync ones, written at the next flush
        self._flush: asyncio.TimerHandle | None = None
        self._flush_after = SYNC_FLUSH_SHARED if store.shared else SYNC_FLUSH
        # what the writer thread has to write, in order, with who waits for it
        self._pending: deque[tuple[Sequence[Write], _Waiter | None]] = deque()
        self._wake = threading.Condition()
        self._closing = False
        self._thread: threading.Thread | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.on_claimed: Callable[[Claimed], None] | None = None  # runtime/store/recovery.py

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> Claimed:
        """Start the writer; claim what the last server (or a dead replica) left."""
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._write_loop, name="cogserve-store",
                                        daemon=True)
        self._thread.start()
        if self.store.shared:
            await asyncio.to_thread(self.store.heartbeat, self.owner, self.lease)
            self._heartbeat = asyncio.get_running_loop().create_task(self._keep_alive())
        return await asyncio.to_thread(self.store.claim, self.owner)

    async def close(self) -> None:
        """Write what is left, stop the writer, release the store (a clean exit; a
        second call does nothing)."""
        if self._closing:
            return
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        if self._flush is not None:
            self._flush.cancel()
        self._flush_sync()
        with self._wake:
            self._closing = True
            self._wake.notify()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, 10.0)
        self.store.close(self.owner)

    async def _keep_alive(self) -> None:
        """Shared stores: renew this server's lease, and take over dead replicas' work."""
        while True:
            await asyncio.sleep(self.lease / 3)
            try:
                await asyncio.to_thread(self.store.heartbeat, self.owner, self.lease)
                claimed = await asyncio.to_thread(self.store.claim, self.owner)
            except StoreError as exc:
                self._failed(exc)
                continue
            with self._wake:
                caught_up = not self._pending
            if self.failure is not None and caught_up:  # else the writer says so
                self._recovered()
            if (claimed.records or claimed.hooks) and self.on_claimed is not None:
                self.on_claimed(claimed)

    # ------------------------------------------------------------ what the runtime tells it

    async def accept(self, prediction: Prediction, request: bytes) -> bytes:
        """An async prediction: its record is written before this returns (and so
        before its `202`); from now on each change of stage is written. `request`
        (`recovery.StoredRequest`) makes it again if it never started. Returns the body
        recorded: the prediction as it was accepted, which the `202` carries."""
        if self.failure is not None:
            raise StoreError(self.failure)
        self._tracked.add(prediction.id)
        record = record_of(prediction, request)
        if record.stage is Stage.FINISHED:
            self._tracked.discard(prediction.id)
        await asyncio.wrap_future(self.post_waited([record]))
        return record.body

    def listener(self, prediction: Prediction, event: Event, payload: dict[str, Any]) -> None:
        """Prediction listener (every prediction Cog's routes can be asked for again)."""
        if event is _COMPLETED:
            body = prediction.encoded()  # made already, for the answer and memory's store
            too_big = len(body) > self.bounds.bytes
            if prediction.id in self._tracked:
                self._tracked.discard(prediction.id)
                self.post([Dropped(prediction.id) if too_big else record_of(prediction)])
                return
            if self.failure is not None or too_big:  # its client has its answer (and
                return  # kept writes must not grow with every request of an outage)
            # a tuple of values it has (the prediction itself goes, as without a store);
            # the status as a plain str, an enum member's documented `_value_`
            sync = self._sync
            sync.append((prediction.id, prediction.kind, prediction.status._value_,
                         prediction.created, body))
            if len(sync) >= SYNC_BATCH:
                self._flush_sync()
            elif self._flush is None:
                self._flush = asyncio.get_running_loop().call_later(self._flush_after,
                                                                    self._flush_sync)
        elif event is _START and prediction.id in self._tracked:
            self.post([record_of(prediction)])

    def record_start(self, prediction: Prediction) -> _Waiter | None:
        """`Predictions.record_start`: a queued async prediction is written `running`
        before its worker gets it (a write's round trip later); None for the others,
        and while the store fails (it starts at once, as without a store)."""
        if prediction.id not in self._tracked or self.failure is not None:
            return None
        return self.post_waited([record_of(prediction, stage=Stage.RUNNING)])

    def _flush_sync(self) -> _Waiter | None:
        """Hand the finished sync predictions to the writer; the future settles once
        they are written (None: there were none)."""
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        if not self._sync:
            return None
        batch, self._sync = self._sync, []
        return self.post_waited([FinishedBatch(batch)])

    def post(self, writes: Sequence[Write]) -> None:
        """Queue writes for the writer thread."""
        with self._wake:
            self._pending.append((writes, None))
            self._wake.notify()

    def post_waited(self, writes: Sequence[Write]) -> _Waiter:
        """Queue writes; the future settles once they are written (or raises the
        StoreError of the first try that failed: they are still written later)."""
        waiter: _Waiter = concurrent.futures.Future()
        with self._wake:
            self._pending.append((writes, waiter))
            self._wake.notify()
        return waiter

    # ------------------------------------------------------------ reading

    def describe_bounds(self) -> str:
        bounds = self.bounds
        age = f", for {bounds.age:g} seconds" if bounds.age else ""
        return (f"the prediction store keeps the last {bounds.count} finished predictions "
                f"within {bounds.bytes} bytes{age} (COGSERVE_RECENT_PREDICTIONS, _BYTES, _AGE)")

    async def get(self, prediction_id: str) -> Record | None:
        return await asyncio.to_thread(self.store.get, prediction_id)

    async def was_evicted(self, prediction_id: str) -> bool:
        return await asyncio.to_thread(self.store.was_evicted, prediction_id)

    async def page(self, kind: str, status: str | None, limit: int, cursor: str | None
                   ) -> Page:
        written = self._flush_sync()  # what finished a moment ago is listed too
        if written is not None:
            with contextlib.suppress(StoreError):  # (the page says what the store has)
                await asyncio.wrap_future(written)
        return await asyncio.to_thread(self.store.page, kind, status, limit, cursor)

    # ------------------------------------------------------------ the writer thread

    def _write_loop(self) -> None:
        delay = RETRY_MIN
        failing = False
        while True:
            with self._wake:
                while not self._pending and not self._closing:
                    self._wake.wait()
                if not self._pending:
                    return
                taken = list(self._pending)
                self._pending.clear()
            batch = [write for writes, _ in taken for write in writes]
            try:
                self.store.write(batch, self.bounds, self.owner)
            except StoreError as exc:
                failing = True
                # whoever waits hears of it now (a route answers 503); the writes are
                # kept, in order, and written once the store answers again
                for _, waiter in taken:
                    if waiter is not None and not waiter.done():
                        waiter.set_exception(exc)
                with self._wake:
                    self._pending.extendleft((writes, None) for writes, _ in reversed(taken))
                    closing = self._closing
                self._on_loop(functools.partial(self._failed, exc))
                if closing:
                    log.error("the prediction store could not be written at exit; %d writes "
                              "are lost: %s", len(batch), exc)
                    return
                with self._wake:  # a close wakes it early
                    self._wake.wait(delay)
                delay = min(RETRY_MAX, delay * 2)
                continue
            delay = RETRY_MIN
            for _, waiter in taken:
                if waiter is not None:
                    waiter.set_result(None)
            if failing:
                failing = False
                self._on_loop(self._recovered)

    def _on_loop(self, call: Callable[[], None]) -> None:
        """Run `call` on the event loop (the writer thread never touches loop state)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(call)

    def _failed(self, exc: StoreError) -> None:
        if self.failure is None:
            log.error("prediction store unavailable: %s", exc)
        self.failure = str(exc)

    def _recovered(self) -> None:
        if self.failure is not None:
            log.info("prediction store available again")
        self.failure = None


class Outbox:
    """One prediction's webhook deliveries in the store (see `runtime/webhooks.py`)."""

    __slots__ = ("durable", "prediction_id", "url", "headers", "seq")

    def __init__(self, durable: Durable, prediction_id: str, url: str, headers: bytes,
                 after: int = 0) -> None:
        self.durable = durable
        self.prediction_id = prediction_id
        self.url = url
        self.headers = headers
        # sequence numbers grow across restarts too: a delivery made after one follows
        # those that were pending before it
        self.seq = max(after, time.time_ns())

    def add(self, delivery: str, body: bytes, replaces: int | None = None
            ) -> tuple[int, _Waiter]:
        """Write a delivery (or a newer body for a queued one, `replaces` its seq)."""
        if replaces is None:
            self.seq += 1
        seq = self.seq if replaces is None else replaces
        return seq, self.durable.post_waited([Hook(self.prediction_id, seq, delivery, self.url,
                                                   body, self.headers)])

    def done(self, seq: int) -> None:
        self.durable.post([HookDone(self.prediction_id, seq)])


def record_of(prediction: Prediction, request: bytes | None = None,
              stage: Stage | None = None) -> Record:
    """The prediction as stored now (`stage`: as it is about to be)."""
    if stage is None:
        stage = (Stage.FINISHED if prediction.terminal else
                 Stage.RUNNING if prediction.started_at is not None else Stage.QUEUED)
    completed = prediction.completed_at
    return Record(prediction.id, prediction.kind, prediction.status, stage,
                  prediction.created, prediction.encoded(),
                  completed.timestamp() if completed is not None else None, request)
