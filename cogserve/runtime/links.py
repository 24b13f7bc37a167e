"""The joint between the facade and its two owners, kept out of `service.py`:
`WorkerReports` routes what the workers report (`workers.WorkerListener`) to the facade
and the predictions. (The other way, the predictions reach the workers through
`slots.WorkerSlots`.)
"""

from __future__ import annotations

from collections.abc import Callable

from cogserve.runtime.pool import Member, WorkerState
from cogserve.runtime.workers import ModelInfo
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
