"""The predictions in flight and queued: the single owner of their state.

`Predictions` takes a built `Prediction` and either hands it to a free slot (`_hand_off`:
the slot is taken, the frame delivered, the deadline started, the prediction marked
started) or queues it in the `Backlog` until a slot frees. Frames from the worker are
applied by `frames.WorkerFrames`, and every end goes through `complete`: the slot is
given back first (to the oldest queued prediction, if one waits), then the prediction
settles and wakes its waiters. Cancels (queued: ended here; running: sent to the worker,
and after `cancel_timeout` its worker is ended), deadlines and queue timeouts all end
there too.

It knows slots, never worker processes: what it needs of the workers is the `Slots`
protocol (`runtime/workers.py` provides it). A later store hooks in at `_hand_off`
(where a prediction meets a slot) and `complete` (where it ends).

A `@batch` model's predictions always wait in the backlog (`configure_batching`): the
`Batcher` says which of them leave together, and `_hand_off_batch` gives them one slot,
shared (`pool.Share`), in one BATCH frame. Each stays a prediction of its own here.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
from collections.abc import Callable
from typing import Any, Protocol

import orjson

from cogserve.runtime.ahead import AheadBatches
from cogserve.runtime.backlog import Backlog
from cogserve.runtime.batcher import Batcher
from cogserve.runtime.errors import AtCapacity, InputNotSendable, QueueFull, UnknownPrediction
from cogserve.runtime.events import EventBus, RuntimeEvent
from cogserve.runtime.pool import Member, Slot, WorkerState
from cogserve.runtime.prediction import Prediction
from cogserve.sdk.runner import BatchLimits
from cogserve.wire import protocol
from cogserve.wire.protocol import Mode
from cogserve.wire.states import Status

log = logging.getLogger("cogserve")

# a queued prediction about to start -> the future of its start's write, or None
StartRecorder = Callable[[Prediction], "concurrent.futures.Future[None] | None"]


class Slots(Protocol):
    """What the predictions need of the workers."""

    @property
    def state(self) -> WorkerState: ...
    @property
    def total(self) -> int: ...  # slots of all workers (the queue's Retry-After)
    def pick(self) -> Member | None: ...
    def pick_ahead(self) -> Member | None: ...  # a busy worker that takes a batch ahead
    def deliver(self, slot: Slot, message: protocol.Message) -> None: ...
    def deliver_batch(self, slot: Slot, messages: list[protocol.Message]) -> None: ...
    def send_cancel(self, slot: Slot, prediction_id: str) -> None: ...
    def end_ignoring_cancel(self, slot: Slot, prediction_id: str) -> None: ...
    def released(self, member: Member) -> None: ...


class Predictions:
    def __init__(self, slots: Slots, events: EventBus, *, queue_size: int = 0,
                 queue_timeout: float | None = None, cancel_timeout: float = 5.0) -> None:
        self._slots = slots
        self._events = events
        self.cancel_timeout = cancel_timeout
        self.running: dict[str, Prediction] = {}  # queued and running, by id
        self.backlog: Backlog | None = None
        self.batcher: Batcher | None = None  # a @batch model's (see `configure_batching`)
        self._ahead = AheadBatches()  # batches sent ahead, until each takes its slot
        self._queue_size = queue_size
        self._queue_timeout = queue_timeout
        if queue_size > 0:
            self.backlog = Backlog(queue_size, queue_timeout, self._queue_timed_out)
        self._mean_run = 1.0  # seconds, moving average: the queue's Retry-After estimate
        # the durable store's hook (`Durable.record_start`): a queued prediction it keeps
        # has its start written before its worker gets it, so one that ran cannot look
        # queued after a crash and run again; None: predictions start at once
        self.record_start: StartRecorder | None = None

    def __len__(self) -> int:
        return len(self.running)

    def get(self, prediction_id: str) -> Prediction | None:
        return self.running.get(prediction_id)

    @property
    def queue_full(self) -> bool:
        """No place to wait: no queue, or a full one."""
        return self.backlog is None or self.backlog.full

    def configure_batching(self, limits: BatchLimits | None, *, ahead: bool = False) -> None:
        """A `@batch` model's predictions wait in the backlog to be batched: the queue of
        --queue-size, or one of their own holding `max_size` per slot (a slot of a
        batched model serves that many; more get Cog's 409, as busy slots do). With
        `ahead` (a sync run()), a full batch may go to a busy worker (`Batcher`)."""
        if self.batcher is not None:
            self.batcher.close()
        self.batcher = None
        if limits is None:
            return
        self.batcher = Batcher(limits, self._events, self.run_queued, ahead=ahead)
        if self._queue_size > 0:
            return
        capacity = limits.max_size * max(1, self._slots.total)
        if self.backlog is None:
            self.backlog = Backlog(capacity, self._queue_timeout, self._queue_timed_out)
        self.backlog.capacity = capacity

    def check_capacity(self, mode: Mode = Mode.PREDICT) -> None:
        """Raise what `submit` would for want of a slot (AtCapacity) or of a place in
        the queue (QueueFull). A `@batch` model's predictions always wait in the
        backlog: without --queue-size it is their own, and a full one is Cog's 409."""
        batched = self.batcher is not None and mode is Mode.PREDICT
        if not batched and self._slots.pick() is not None:
            return
        self._check_backlog(batched)

    def _check_backlog(self, batched: bool) -> None:
        """No slot is free (or the prediction is batched): raise unless the backlog takes it."""
        backlog = self.backlog
        queued = self._queue_size > 0
        if backlog is None or not (queued or batched) or (backlog.full and not queued):
            raise AtCapacity()
        if backlog.full:
            per_slot = self.batcher.limits.max_size if self.batcher is not None else 1
            raise QueueFull(backlog.capacity, backlog.retry_after(
                max(1, self._slots.total * per_slot), self._mean_run))

    def place(self, mode: Mode = Mode.PREDICT) -> Member | None:
        """Where a new prediction goes: a worker with a free slot, or None for the queue
        (always, for a `@batch` model's predictions); raises AtCapacity or QueueFull
        when it can go nowhere (before it is built)."""
        member = None
        batched = self.batcher is not None and mode is Mode.PREDICT
        if not batched:
            member = self._slots.pick()
        if member is None:
            self._check_backlog(batched)
        return member

    def submit(self, prediction: Prediction, message: protocol.Message,
               member: Member | None) -> None:
        """Hand the prediction to `member` (from `place`), or queue it when None; raise
        InputNotSendable (then nothing of it is kept)."""
        if member is None:
            backlog = self.backlog
            assert backlog is not None
            try:  # refused now (422) rather than failing once it leaves the queue
                orjson.dumps(message)
            except TypeError as exc:
                self._events.emit(RuntimeEvent.PREDICTION_REFUSED, prediction=prediction)
                raise unencodable(exc) from None
            self.running[prediction.id] = prediction
            backlog.push(prediction, message)
            if self.batcher is not None:
                self.run_queued()  # a batch may be full, or its wait starts now
            return
        self.running[prediction.id] = prediction
        try:
            self._hand_off(member, prediction, message)
        except TypeError as exc:  # orjson: nested too deeply, an int beyond 64 bits
            self.running.pop(prediction.id, None)
            _give_back(prediction)
            self._events.emit(RuntimeEvent.PREDICTION_REFUSED, prediction=prediction)
            raise unencodable(exc) from None

    def _hand_off(self, member: Member, prediction: Prediction,
                  message: protocol.Message) -> None:
        """Take a slot of `member` and deliver the prediction; the deadline starts now."""
        prediction.slot = member.acquire()
        self._deliver(prediction, prediction.slot, message)

    def _deliver(self, prediction: Prediction, slot: Slot, message: protocol.Message) -> None:
        self._slots.deliver(slot, message)
        if prediction.timeout:
            prediction.deadline = asyncio.get_running_loop().call_later(
                prediction.timeout, self._deadline_passed, prediction)
        prediction.mark_started()

    def _hand_off_batch(self, member: Member, batch: list[tuple[Prediction, protocol.Message]],
                        permit: Slot | None = None) -> None:
        """Give a batch one slot of `member` (or the `permit` of a batch sent ahead),
        shared by its predictions (each gives its share back when the worker ends it), in
        one frame; each deadline starts now."""
        shares = (permit or member.acquire()).share(len(batch))
        for (prediction, _), share in zip(batch, shares, strict=True):
            prediction.slot = share
        try:
            self._slots.deliver_batch(shares[0], [message for _, message in batch])
        except (TypeError, OSError) as exc:
            for prediction, _ in batch:
                _give_back(prediction)
                self.complete(prediction, Status.FAILED, f"prediction failed: {exc}")
            return
        loop = asyncio.get_running_loop()
        for prediction, _ in batch:
            if prediction.timeout:
                prediction.deadline = loop.call_later(prediction.timeout,
                                                      self._deadline_passed, prediction)
            prediction.mark_started()

    def _start_recorded(self, prediction: Prediction, message: protocol.Message) -> None:
        """Its start is in the store: deliver it (unless it ended meanwhile: canceled,
        or its worker lost; its slot went back then)."""
        slot = prediction.slot
        if prediction.terminal or slot is None:
            return
        self._deliver_queued(prediction, slot, message)

    def _deliver_queued(self, prediction: Prediction, slot: Slot,
                        message: protocol.Message) -> None:
        """Deliver a prediction that waited (its client has its 202 or waits): one that
        cannot be sent fails, and its slot goes back."""
        try:
            self._deliver(prediction, slot, message)
        except (TypeError, OSError) as exc:
            _give_back(prediction)
            self.complete(prediction, Status.FAILED, f"prediction failed: {exc}")

    def run_queued(self) -> None:
        """Hand waiting predictions to free slots, oldest first."""
        backlog = self.backlog
        if backlog is None:
            return
        while len(backlog) and (member := self._slots.pick()) is not None:
            if self.batcher is not None:
                batch = self.batcher.take(backlog, len(self.running) - len(backlog))
                if batch is not None:
                    if not batch:
                        break  # it waits to fill; the batcher's timer calls again
                    self._hand_off_batch(member, batch)
                    continue
            entry = backlog.pop()
            assert entry is not None
            prediction, message = entry
            recorded = self.record_start(prediction) if self.record_start is not None else None
            if recorded is not None:  # the slot is held while its start is written
                prediction.slot = member.acquire()
                recorded.add_done_callback(functools.partial(
                    _when_written, asyncio.get_running_loop(), self._start_recorded,
                    prediction, message))
                continue
            prediction.slot = member.acquire()
            self._deliver_queued(prediction, prediction.slot, message)
        batcher = self.batcher
        if batcher is not None and batcher.ahead:
            while len(backlog) >= batcher.limits.max_size \
                    and (member := self._slots.pick_ahead()) is not None:
                batch = batcher.take_ahead(backlog)
                if batch is None:
                    break
                permit = member.acquire_ahead()
                self._ahead.sent(member, permit, batch)
                self._hand_off_batch(member, batch, permit)

    def fail_queued(self, reason: str) -> None:
        if self.backlog is not None:
            for prediction in self.backlog.drain():
                self.complete(prediction, Status.FAILED, reason)

    def _queue_timed_out(self, prediction: Prediction) -> None:
        if self.backlog is not None and self.backlog.remove(prediction.id) is not None:
            self.complete(prediction, Status.FAILED,
                          f"prediction waited in the queue for more than "
                          f"{self.backlog.timeout:g} seconds (--queue-timeout) without a "
                          "free slot")

    def _deadline_passed(self, prediction: Prediction) -> None:
        """Past its deadline: cancelled through the normal path, then reported failed."""
        if prediction.terminal:
            return
        prediction.deadline_passed = True
        log.warning("prediction %s exceeded its deadline of %g seconds; cancelling it",
                    prediction.id, prediction.timeout)
        self.cancel(prediction.id)

    # ------------------------------------------------------------ cancel

    def cancel(self, prediction_id: str) -> Prediction:
        """Cancel a queued or running prediction (or raise UnknownPrediction)."""
        prediction = self.running.get(prediction_id)
        if prediction is None:
            raise UnknownPrediction(prediction_id)
        slot = prediction.slot
        if slot is None:  # still queued: it never reaches the model
            self.complete(prediction, Status.CANCELED)
        elif prediction.request_cancel():
            self._slots.send_cancel(slot, prediction.id)
            asyncio.get_running_loop().call_later(self.cancel_timeout, self._cancel_overdue,
                                                  prediction)
        return prediction

    def _cancel_overdue(self, prediction: Prediction) -> None:
        if not prediction.terminal and prediction.slot is not None:
            self._slots.end_ignoring_cancel(prediction.slot, prediction.id)

    # ------------------------------------------------------------ frames

    # ------------------------------------------------------------ completion

    def complete(self, prediction: Prediction, status: Status, error: str | None = None,
                 output: Any = None, predict_time: float | None = None) -> None:
        """The one way a prediction ends. Give the slot back first (to the queue's oldest,
        if one waits), then settle the prediction (which wakes its waiters)."""
        ended_before = prediction.terminal  # then it is not announced a second time
        if self.running.pop(prediction.id, None) is not None:
            slot = prediction.slot
            if slot is not None:
                slot.release()
                if self.batcher is not None:
                    self.batcher.freed(len(self.backlog) if self.backlog is not None else 0)
                    if self._ahead:
                        self._ahead.slot_released(slot.member)
                if slot.member.draining:  # a reload waits for it to be idle
                    self._slots.released(slot.member)
                if self.backlog is not None:
                    self.run_queued()
            elif self.backlog is not None:
                self.backlog.remove(prediction.id)
        if prediction.deadline is not None:
            prediction.deadline.cancel()
        if status is Status.SUCCEEDED:
            if self.backlog is not None and predict_time is not None:
                self._mean_run += (predict_time - self._mean_run) * 0.2
            prediction.succeed(output, predict_time)
        elif status is Status.FAILED:
            prediction.fail(error or "prediction failed", predict_time)
        elif prediction.deadline_passed:  # the cancel its deadline sent: a failure
            prediction.expire(predict_time)
        else:
            prediction.cancel(predict_time)
        if not ended_before:
            self._events.emit(RuntimeEvent.PREDICTION_COMPLETED, prediction=prediction)

    def on_lost(self, member: Member, reason: str, during_shutdown: bool) -> None:
        """`member`'s worker ended: what ran on it ends too. A prediction whose cancel
        was asked for ends `canceled` (the reason in its logs), unless the server is
        shutting down. A batch sent ahead that had not begun waits again instead."""
        back = self._ahead.take_back(member, self.running)
        if back and self.backlog is not None:
            self.backlog.restore(back)
        mine = [p for p in self.running.values()
                if p.slot is not None and p.slot.member is member]
        for prediction in mine:
            if prediction.cancel_requested and not during_shutdown:
                prediction.append_log("stderr", f"cogserve: {reason}\n")
                self.complete(prediction, Status.CANCELED)
            else:
                self.complete(prediction, Status.FAILED, f"prediction failed: {reason}")
        if during_shutdown and self._slots.state is not WorkerState.READY:
            self.fail_queued("prediction failed: the server shut down before it ran")

    async def settled(self, timeout: float) -> bool:
        """Wait until no prediction is in flight; False if `timeout` seconds pass first."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.running:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            await asyncio.wait([p.done for p in list(self.running.values())],
                               timeout=remaining)
        return True


def _when_written(loop: asyncio.AbstractEventLoop,
                  call: Callable[[Prediction, protocol.Message], None], prediction: Prediction,
                  message: protocol.Message, _written: concurrent.futures.Future[None]) -> None:
    """The start's write settled (in the store's writer thread, written or failed):
    `call` runs on the loop."""
    loop.call_soon_threadsafe(call, prediction, message)


def _give_back(prediction: Prediction) -> None:
    """Nothing reached the worker: give the slot back, or it is lost for good."""
    if prediction.slot is not None:
        prediction.slot.release()
        prediction.slot = None


def unencodable(exc: TypeError) -> InputNotSendable:
    return InputNotSendable(f"the input cannot be passed to the model: {exc} (JSON nested "
                            "deeper than about 250 levels is refused)")


async def drain(predictions: Predictions, drain_timeout: float, cancel_timeout: float
                ) -> bool:
    """Let in-flight (and queued) predictions finish within `drain_timeout`; cancel
    those still running, and fail those that outlive `cancel_timeout` too. False: some
    ignored their cancel, and their workers must be killed (`Service.drain`)."""
    if await predictions.settled(drain_timeout):
        return True
    running = list(predictions.running.values())
    log.warning("drain timeout (%gs, COGSERVE_DRAIN_TIMEOUT): canceling %d "
                "predictions still running", drain_timeout, len(running))
    for prediction in running:
        predictions.cancel(prediction.id)
    if await predictions.settled(cancel_timeout):
        return True
    for prediction in list(predictions.running.values()):
        predictions.complete(prediction, Status.FAILED, "prediction failed: the "
                             "server shut down before it finished (it ignored the "
                             "cancel that followed the drain timeout)")
    return False
