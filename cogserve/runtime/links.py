"""The joints between the facade and its two owners, kept out of `service.py`.

`WorkerReports` routes what the workers report (`workers.WorkerListener`) to the facade and
the predictions; `SlotsOf` shows the workers to the predictions as their `Slots`; and
the health of workers in the facade's terms (`HEALTH_OF`, `not_ready`, `worker_views`).
"""

from __future__ import annotations

from collections.abc import Callable

from cogserve import protocol
from cogserve.runtime.health import WorkerView
from cogserve.runtime.pool import Member, Pool, WorkerState
from cogserve.runtime.workers import ModelInfo, Workers
from cogserve.states import Health


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


HEALTH_OF = {state: Health(state.value) for state in WorkerState}


def not_ready(status: Health, fatal_reason: str | None) -> str:
    """Why no prediction can be created in `status` (NotReady's message)."""
    return {
        Health.STARTING: "Setup has not finished yet. Wait until it has finished, or "
                         "GET /health-check for status.",
        Health.SETUP_FAILED: "Setup failed: the model cannot run predictions. GET "
                             "/health-check for its logs.",
        Health.DEFUNCT: f"The model is defunct ({fatal_reason}); restart the server.",
    }.get(status, f"The model is not ready ({status})")


def worker_views(pool: Pool) -> tuple[WorkerView, ...]:
    return tuple(WorkerView(m.index, HEALTH_OF[m.state],
                            m.process.pid if m.process is not None else None,
                            m.in_use if m.state is WorkerState.READY else 0)
                 for m in pool.members)
