"""Dynamic batching for a `@batch` model: which waiting predictions leave together.

The predictions of a `@batch` model always wait in the backlog first, even when a slot
is free, so that those arriving together share one run() call. The backlog is the
queue of `--queue-size`; without one, the `Service` gives a batched model a backlog of
its own that holds `max_size` predictions per slot (a slot of a batched model serves
that many), refusing more with Cog's 409 as an unbatched model does when its slots
are busy.

The rule (LitServe's): once a slot is free, the oldest waiting predictions leave as one
batch as soon as there are `max_size` of them, or `max_wait` seconds after the slot was
free for them, with however many there are then. While every slot is busy they keep
waiting. Counting the wait from the free slot rather than from the oldest arrival (Ray
Serve's rule) lets the clients just answered rejoin the next batch: with 16 clients in
a loop the MLP of bench scenario 11 got batches of 12.9 instead of 8.8 (ping-pong
between two half batches). A batch is the run of consecutive predictions at the head of
the backlog: a training (never batched) that waits among them leaves alone, in its turn.

The batcher only decides and keeps the fill timer; the `Service` hands a batch to a
slot (one BATCH message, the slot shared by its members: `pool.Share`) and keeps every
prediction's own state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from cogserve.protocol import Message
from cogserve.runner import BatchLimits
from cogserve.runtime.backlog import Backlog
from cogserve.runtime.events import EventBus, RuntimeEvent
from cogserve.runtime.prediction import Prediction

TRAINING = "training"  # `Prediction.kind` of a training


class Batcher:
    def __init__(self, limits: BatchLimits, events: EventBus, wake: Callable[[], None]) -> None:
        self.limits = limits
        self._events = events
        self._wake = wake  # the Service's dispatch: called when the oldest has waited enough
        self._timer: asyncio.TimerHandle | None = None
        self._opened: float | None = None  # when a slot was first free for the next batch

    def take(self, backlog: Backlog) -> list[tuple[Prediction, Message]] | None:
        """The batch that leaves now, oldest first; `[]` when it should wait to fill (the
        timer calls `wake` `max_wait` after the slot was free); None when the oldest is
        a training, which leaves alone as an unbatched prediction does.

        Called only when a slot is free and the backlog is not empty.
        """
        kind, count, since = backlog.head(self.limits.max_size)
        if kind == TRAINING:
            return None
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._opened is None or since > self._opened + self.limits.max_wait:
            # a slot is free for the next batch from now (a window that closed with
            # nobody waiting, say they were all cancelled, does not count)
            self._opened = now
        if count < self.limits.max_size and now < self._opened + self.limits.max_wait:
            if self._timer is None:
                self._timer = loop.call_at(self._opened + self.limits.max_wait, self._fire)
            return []
        self._opened = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        taken = []
        for _ in range(count):
            entry = backlog.pop()
            assert entry is not None
            taken.append(entry)
        self._events.emit(RuntimeEvent.BATCH_FORMED, size=count, wait=now - since)
        return taken

    def _fire(self) -> None:
        self._timer = None
        self._wake()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
