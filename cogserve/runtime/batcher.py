"""Dynamic batching for a `@batch` model: which waiting predictions leave together.

The predictions of a `@batch` model always wait in the backlog first, even when a slot
is free, so that those arriving together share one run() call. The backlog is the
queue of `--queue-size`; without one, the `Service` gives a batched model a backlog of
its own that holds `max_size` predictions per slot (a slot of a batched model serves
that many), refusing more with Cog's 409 as an unbatched model does when its slots
are busy.

The rule (LitServe's, Ray Serve's): when a slot is free, the oldest waiting predictions
leave as one batch as soon as there are `max_size` of them, or once the oldest has waited
`max_wait` seconds, with however many there are then. While every slot is busy they
keep waiting, so a busy model takes the next batch as soon as it is free. A batch is
the run of consecutive predictions at the head of the backlog: a training (never
batched) that waits among them leaves alone, in its turn.

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

    def take(self, backlog: Backlog) -> list[tuple[Prediction, Message]] | None:
        """The batch that leaves now, oldest first; `[]` when it should wait to fill (the
        timer calls `wake` when the oldest has waited `max_wait`); None when the oldest
        is a training, which leaves alone as an unbatched prediction does.

        Called only when a slot is free and the backlog is not empty.
        """
        kind, count, since = backlog.head(self.limits.max_size)
        if kind == TRAINING:
            return None
        loop = asyncio.get_running_loop()
        waited = loop.time() - since
        if count < self.limits.max_size and waited < self.limits.max_wait:
            when = since + self.limits.max_wait
            if self._timer is None or self._timer.when() > when:
                if self._timer is not None:
                    self._timer.cancel()
                self._timer = loop.call_at(when, self._fire)
            return []
        taken = []
        for _ in range(count):
            entry = backlog.pop()
            assert entry is not None
            taken.append(entry)
        self._events.emit(RuntimeEvent.BATCH_FORMED, size=count, wait=waited)
        return taken

    def _fire(self) -> None:
        self._timer = None
        self._wake()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
