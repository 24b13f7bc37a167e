"""Whether the server can take a prediction now, and its health: read from the workers,
the predictions and the store, for the facade (`Service.status`, `check_accepting`,
`health`, `capacity`), which holds no state of its own for them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from cogserve.runtime.errors import NotReady
from cogserve.runtime.health import Capacity, HealthSnapshot, QueueView, WorkerView
from cogserve.runtime.inflight import Predictions
from cogserve.runtime.pool import Pool, WorkerState
from cogserve.runtime.setup_report import SetupView
from cogserve.runtime.store.keeper import Store
from cogserve.runtime.workers import Workers
from cogserve.wire.states import SERVING, Health

HEALTH_OF = {state: Health(state.value) for state in WorkerState}


@dataclass(slots=True)
class Readiness:
    _workers: Workers
    _predictions: Predictions
    _store: Store
    _queue_size: int  # --queue-size: 0, no queue the user asked for

    @property
    def status(self) -> Health:
        """The server's state: derived from its workers' (see `Pool.state`)."""
        return HEALTH_OF[self._workers.pool.state]

    @property
    def current(self) -> Health:
        """`status`, with BUSY for READY with every slot taken and no place in the queue."""
        status = self.status
        if status is Health.READY and self._workers.pool.free <= 0 \
                and self._predictions.queue_full:
            return Health.BUSY
        return status

    @property
    def restarting(self) -> bool:
        """No worker can serve right now, but the server was serving and a worker is on
        its way back (restarted after an ignored cancel, replaced after a crash, reloaded).

        A prediction then meets a slot that is not free yet, not a server that is not
        ready: it waits in the queue for the new worker (`--queue-size`), or without a
        queue gets 409, which is what Cog answers while its only slot is held (a run()
        that ignores a cancel keeps it). Health stays STARTING meanwhile, so readiness
        probes send new traffic elsewhere.
        """
        return self._workers.served and self.status is Health.STARTING

    def check_accepting(self) -> None:
        """Raise NotReady unless a prediction could be created now (slots aside)."""
        workers = self._workers
        if workers.shutting_down:
            raise NotReady("The server is shutting down", None)
        if workers.pool.state is WorkerState.READY:  # asked per request: READY, at once
            return
        status = self.status
        if status is not Health.READY and not self.restarting:
            raise NotReady(not_ready(status, workers.fatal_reason), status)

    async def snapshot(self, setup: SetupView, versions: dict[str, str],
                       healthcheck: Callable[[], Awaitable[str | None]] | None
                       ) -> HealthSnapshot:
        """The health now; runs the model's `healthcheck` (if it has one) when it serves."""
        status = self.current
        error = None
        if status in SERVING and healthcheck is not None:
            error = await healthcheck()
            if error is not None:
                status = Health.UNHEALTHY
        store_error = self._store.failure
        if store_error is not None and status in SERVING:
            status = Health.UNHEALTHY  # until the store answers again
        backlog = self._predictions.backlog
        pool = self._workers.pool
        return HealthSnapshot(
            status, setup, versions, error,
            # a @batch model's own waiting area is no queue the user asked for
            QueueView(len(backlog), backlog.capacity)
            if backlog is not None and self._queue_size > 0 else None,
            worker_views(pool) if len(pool) > 1 else None, store_error)

    def capacity(self) -> Capacity:
        ready = [m for m in self._workers.pool.members if m.state is WorkerState.READY]
        backlog = self._predictions.backlog
        return Capacity(sum(m.slots for m in ready), sum(m.in_use for m in ready), len(ready),
                        len(backlog) if backlog is not None else 0)


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
