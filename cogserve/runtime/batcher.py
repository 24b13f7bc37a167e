"""Dynamic batching for a `@batch` model: which waiting predictions leave together.

The predictions of a `@batch` model always wait in the backlog first, even when a slot
is free, so that those arriving together share one run() call. The backlog is the
queue of `--queue-size`; without one, the `Service` gives a batched model a backlog of
its own that holds `max_size` predictions per slot (a slot of a batched model serves
that many), refusing more with Cog's 409 as an unbatched model does when its slots
are busy.

The rule: once a slot is free, the oldest waiting predictions leave as one batch as
soon as there are `max_size` of them, or `max_wait` seconds after the slot was freed,
with however many there are then, and those that the server is still reading at that
moment: the batch leaves at the first turn of the event loop that brings no new one,
when it is full, or `max_wait` after its window closed, whichever comes first. The
window closes early once as many predictions came since the slot was freed as the
batches that freed it had answered, with none running: every client just answered is
back, and nobody else is expected. While every slot is busy they keep waiting. Counting
the wait from the freed slot rather than from the oldest arrival (Ray Serve's rule)
lets the clients just answered rejoin the next batch: with 16 clients in a loop the MLP
of bench scenario 11 got batches of 12.9 instead of 8.8 (ping-pong between two half
batches). A prediction that comes when that window has closed (the model idle for
`max_wait` or more, or never used) leaves at once: waiting could only add latency, as
nobody just answered is coming back. Before, its window opened when it came, so a lone
request on an idle model always waited `max_wait` (issue 35 measured 13.3 ms against
9.1 ms unbatched with a 2 ms `max_wait`); now it waits no longer than an unbatched one,
and a request never waits more than `max_wait` for a batch to fill, plus at most
`max_wait` more while requests are still coming in.

The window is for the clients just answered, and it closes once they are all back
(`_answered`, `_waiting`): a client that sends its next request as soon as it has its
answer, alone, otherwise waited `max_wait` for company that never came each time
(3.75 ms against 1.28 ms unbatched on bench scenario 12's model; now 1.4-1.5 ms). Those
that waited through the call do not count as coming back: leaving with them alone
would leave the clients just answered a whole call behind, and the two groups would
take turns for good. Nor does it close while another worker runs a batch: its clients
come back within the window too, and the two groups would keep apart, in calls half
as large. Open-loop traffic is not hastened: what comes within the window after a call
is fewer than the call took (those that came during it were waiting).

The extension past `max_wait` is for the clients just answered too: the server writes a
batch's answers and reads the clients' next requests one after another on its one event
loop (~0.25 ms each for a 40 KB image on a 2-core VM), so 32 of them come back over
several ms, longer than a 2 ms `max_wait`. A batch that left the moment its window
closed took those read by then, and the rest waited a whole run() call: with a run() of
35 ms that leaves the CPU free (as a GPU's does), 32 clients got batches of 21 and
455-477 req/s; taking the burst being read, 31 and 652 (issue 35). A run() that is
CPU-bound gains little from a fuller batch, and lost nothing to the wait (bench
scenarios 12 and 12b: 1.05x and 1.08x req/s).

A batch is the run of consecutive predictions at the head of the backlog: a training
(never batched) that waits among them leaves alone, in its turn.

A full batch may also go to a worker whose slots are all busy, ahead of its turn
(`take_ahead`, for a sync run() only: an async one would run it at once, beyond its
concurrency): the worker prepares its inputs (decodes its data: URLs, fetches its
files) while the running batch has the GPU, and starts it the moment that one returns.
Without it the GPU waits, after every batch, for the next one's frame and inputs (issue
35). Only full ones go ahead, so a batch never leaves smaller for it; one that is not
full waits for the slot as before.

The batcher only decides and keeps the fill timer; the `Service` hands a batch to a
slot (one BATCH message, the slot shared by its members: `pool.Share`) and keeps every
prediction's own state.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable

from cogserve.runtime.backlog import Backlog
from cogserve.runtime.events import EventBus, RuntimeEvent
from cogserve.runtime.prediction import Prediction
from cogserve.sdk.runner import BatchLimits
from cogserve.wire import protocol

TRAINING = "training"  # `Prediction.kind` of a training


class Batcher:
    def __init__(self, limits: BatchLimits, events: EventBus, wake: Callable[[], None],
                 *, ahead: bool = False) -> None:
        self.limits = limits
        self.ahead = ahead  # full batches may go to a busy worker (`take_ahead`)
        self._events = events
        self._wake = wake  # the Service's dispatch: called when the oldest has waited enough
        self._timer: asyncio.Handle | None = None
        self._due = False  # the timer fired: what waits leaves with the next free slot
        self._freed = -math.inf  # when a batch last ended (loop time): its slot was freed
        self._counted = 0  # how many waited at the last look once the window had closed
        self._until = 0.0  # the burst being read is waited for until then (loop time)
        self._answered = 0  # predictions ended since the last batch left (who may return)
        self._window = False  # `_timer` closes a window (at `_freed + max_wait`)
        self._waiting = 0  # predictions waiting when the first of `_answered` ended

    def freed(self, waiting: int) -> None:
        """A prediction of a batch ended: its slot is free (once the batch's last has),
        and the window in which the next batch may fill opens now. `waiting` are in the
        backlog already: those waiting when the first prediction since the last batch left
        ended are not clients coming back."""
        self._freed = asyncio.get_running_loop().time()
        if not self._answered:  # those that came after this were answered, or are new
            self._waiting = waiting
        self._answered += 1
        if self._timer is None:
            self._due = False

    def take(self, backlog: Backlog, in_flight: int
             ) -> list[tuple[Prediction, protocol.Message]] | None:
        """The batch that leaves now, oldest first; `[]` when it should wait to fill (the
        timer calls `wake` when the window closes); None when the oldest is a training,
        which leaves alone as an unbatched prediction does.

        Called only when a slot is free and the backlog is not empty. Outside a window
        the wait is one turn of the event loop (`call_soon`), not none: requests that
        came together, already read from their sockets, still leave together. Once the
        window has closed, the batch still waits one more turn for as long as each
        turn brings requests in (`_counted`), up to `max_wait` more (`_until`): it
        leaves with the burst being read. The window closes at the next turn instead once
        every client just answered is back (`_answered` more than the `_waiting`) and
        no prediction is `in_flight` (another worker's, whose clients may still join).
        """
        kind, count, since = backlog.head(self.limits.max_size)
        if kind == TRAINING:
            return None
        loop = asyncio.get_running_loop()
        if count < self.limits.max_size and not self._due:
            # as many wait as the last batches answered, and none runs: nobody else is
            # expected back
            back = count - self._waiting >= self._answered > 0 and not in_flight
            if self._timer is None:  # a new window: what an earlier one counted is void
                self._counted = 0
                closes = self._freed + self.limits.max_wait
                self._window = loop.time() < closes and not back
                self._timer = loop.call_at(closes, self._fire) if self._window \
                    else loop.call_soon(self._fire)
            elif back and self._window:  # the window closes now
                self._window = False
                self._timer.cancel()
                self._timer = loop.call_soon(self._fire)
            return []
        if count < self.limits.max_size and count > self._counted:
            now = loop.time()
            if not self._counted:
                self._until = now + self.limits.max_wait
            if now < self._until:
                self._counted = count
                self._due = False
                self._timer = loop.call_soon(self._fire)
                return []
        self._counted = 0
        self._due = self._window = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        return self._pop(backlog, count, since)

    def take_ahead(self, backlog: Backlog) -> list[tuple[Prediction, protocol.Message]] | None:
        """A full batch to send ahead to a worker whose slots are all busy (`ahead`), or
        None: only a full one goes, so a batch never leaves smaller than it would have
        by waiting for the slot."""
        if not self.ahead:
            return None
        kind, count, since = backlog.head(self.limits.max_size)
        if kind == TRAINING or count < self.limits.max_size:
            return None
        return self._pop(backlog, count, since)

    def _pop(self, backlog: Backlog, count: int,
             since: float) -> list[tuple[Prediction, protocol.Message]]:
        taken = []
        for _ in range(count):
            entry = backlog.pop()
            assert entry is not None
            taken.append(entry)
        self._answered = 0
        self._events.emit(RuntimeEvent.BATCH_FORMED, size=count,
                          wait=asyncio.get_running_loop().time() - since)
        return taken

    def _fire(self) -> None:
        self._timer = None
        self._window = False
        self._due = True
        self._wake()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
