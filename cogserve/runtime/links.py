"""The joints between the facade and its two owners, kept out of `service.py`.

`WorkerReports` routes what the workers report (`workers.WorkerListener`) to the facade
and the predictions; `SlotsOf` shows the workers to the predictions as their `Slots`.
"""

from __future__ import annotations

from collections.abc import Callable

from cogserve.runtime.pool import Member, WorkerState
from cogserve.runtime.workers import ModelInfo, Workers
from cogserve.wire import protocol


class WorkerReports:
    """What the workers report, routed to the facade and the predictions (each set once
    both are built)."""

    on_data: Callable[[protocol.Message], None]  # the per-frame path: one call
    on_lost: Callable[[Member, str, bool], None]

    def __init__(self, on_schema: Callable[[ModelInfo], None],
                 on_settled: Callable[[WorkerState], None]) -> None:
        self.on_schema = on_schema
        self.on_settled = on_settled


class SlotsOf:
    """The workers as the predictions see them (`predictions.Slots`)."""

    def __init__(self, workers: Workers) -> None:
        self._workers = workers
        self._pool = workers.pool
        self.pick = self._pool.pick
        self.pick_ahead = self._pool.pick_ahead
        self.deliver = workers.deliver
        self.deliver_batch = workers.deliver_batch
        self.send_cancel = workers.send_cancel
        self.end_ignoring_cancel = workers.end_ignoring_cancel
        self.released = workers.released

    @property
    def state(self) -> WorkerState:
        return self._pool.state

    @property
    def total(self) -> int:
        return sum(m.slots for m in self._pool.members)
