"""The workers as the predictions see them: the `inflight.Slots` they are handed.

`Predictions` knows slots, never worker processes. What it does to a worker goes
through here, by slot: a prediction's frame delivered (its big input spilled to the
worker's folder first), a batch's frames as one BATCH frame, a cancel, the worker of a
run() that ignored its cancel killed, a reloading worker stopped once its last slot
came back. `Workers` owns the processes and what their starts and exits mean; this
class only reaches them, so neither grows a second job.
"""

from __future__ import annotations

import asyncio
import logging

from cogserve.runtime import handover
from cogserve.runtime.pool import Member, Restart, Slot, WorkerState
from cogserve.runtime.workers import Workers
from cogserve.wire import protocol

log = logging.getLogger("cogserve")


class WorkerSlots:
    def __init__(self, workers: Workers) -> None:
        self._workers = workers
        self._pool = pool = workers.pool
        self.pick = pool.pick  # per prediction: bound once
        self.pick_ahead = pool.pick_ahead

    @property
    def state(self) -> WorkerState:
        return self._pool.state

    @property
    def total(self) -> int:
        """Slots of all workers (the queue's Retry-After)."""
        return sum(m.slots for m in self._pool.members)

    def deliver(self, slot: Slot, message: protocol.Message) -> None:
        """Send a predict frame to the worker that holds `slot` (big inputs spilled)."""
        member = slot.member
        assert member.process is not None
        handover.spill_input(message, member.tmpdir)
        member.process.send_data(message)

    def deliver_batch(self, slot: Slot, messages: list[protocol.Message]) -> None:
        """Send the predict frames of one `@batch` call as one BATCH frame (each one's big
        input spilled as it would be alone)."""
        member = slot.member
        assert member.process is not None
        for message in messages:
            handover.spill_input(message, member.tmpdir)
        member.process.send_data(protocol.batch(messages))

    def send_cancel(self, slot: Slot, prediction_id: str) -> None:
        process = slot.member.process
        if process is not None:
            process.send_control(protocol.cancel(prediction_id))

    def end_ignoring_cancel(self, slot: Slot, prediction_id: str) -> None:
        """run() ignored a cancel: kill its worker (its exit starts a new one), so the
        slot is not held forever."""
        member = slot.member
        if member.process is None or self._workers.shutting_down:
            return
        log.warning("prediction %s ignored its cancel for %.1fs; restarting %s",
                    prediction_id, self._workers.settings.cancel_timeout,
                    member.label if len(self._pool) > 1 else "the worker")
        member.restart = Restart.CANCEL_IGNORED
        member.state = WorkerState.STARTING
        member.process.kill()

    def released(self, member: Member) -> None:
        """A slot of a draining `member` was given back: a reloading worker now idle stops
        (its exit restarts it)."""
        if member.draining and member.idle and member.process is not None \
                and member.restart is Restart.RELOAD:
            asyncio.get_running_loop().create_task(member.process.stop())
