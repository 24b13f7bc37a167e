"""The worker's serving modes: how one call runs, chosen once when the worker starts.

A call is one prediction (`predict.Job`) or the predictions of one BATCH message
(`batch.Batch`). Every mode has the same two methods: `run(call)`, which runs the call
to its end (a sync worker's modes, on the main thread) or returns the coroutine that
does (an async worker's, for a task), and `interrupt(call, prediction_id)`, which makes
the call stop for a cancel of that prediction. `Cancels.cancel` (in `predict.py`) is the one place a
cancel goes: it finds the running call and asks its mode.

- `Single` (sync worker): run() / train() on the main thread; a cancel is SIGUSR1,
  which raises in it.
- `AsyncOnMain` (sync worker): an async train(), on a loop of its own on the main
  thread; a cancel is `task.cancel()` through that loop.
- `Async` (async worker): a task on the worker's loop; a cancel is `task.cancel()`.
- `Threaded` (async worker): a sync train() in a thread, awaited by a task; a cancel
  is the exception raised in that thread.
- `Batched` (both): one run() for a batch, on the main thread or as a task; a cancel
  ends its member at once, and the last member's interrupts the call as `Single` or
  `Async` would.

A sync worker's modes run plain calls, not coroutines: a coroutine and its driving
cost a no-op prediction 13% more of the worker's instructions (callgrind, 98.8k against
87.1k). `Batch.run`, the batch's one body for both kinds of worker, is a coroutine that
a sync worker drives in one step (`drive`: nothing in it suspends; no event loop and no
asyncio import), once per batch.
"""

from __future__ import annotations

import sys
import threading
from abc import ABC, abstractmethod
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from cogserve.exceptions import CancelationException
from cogserve.model.loader import LoadedModel
from cogserve.wire import protocol
from cogserve.wire.protocol import Mode, ToWorker
from cogserve.worker import predict
from cogserve.worker.batch import Batch
from cogserve.worker.inputs import Downloads
from cogserve.worker.logs import LogRouter
from cogserve.worker.predict import Cancels, Job

Call = Job | Batch


class ServingMode(ABC):
    """How one kind of call runs in this worker (see the module's table)."""

    def __init__(self, model: LoadedModel, cancels: Cancels) -> None:
        self.model = model
        self.cancels = cancels

    @abstractmethod
    def run(self, call: Any) -> Coroutine[Any, Any, None] | None:
        """Run `call` to its end (a sync worker's mode: None), or return the coroutine
        that does (an async worker's); its terminal frames are sent by then."""

    @abstractmethod
    def interrupt(self, call: Any, prediction_id: str) -> None:
        """A cancel of `prediction_id`, which `call` runs (from the control thread in a
        sync worker, on the loop in an async one)."""


class Single(ServingMode):
    """A sync run() (or train()) on the main thread, where a signal can interrupt it."""

    def run(self, call: Job) -> None:
        self.cancels.current = call
        try:
            predict.run_sync(self.model, call)
        finally:
            self.cancels.current = None

    def interrupt(self, call: Job, prediction_id: str) -> None:
        call.cancel_requested = True
        call.stop_transfers()
        if call.in_user_code:
            self.cancels.interrupt(call)


class AsyncOnMain(ServingMode):
    """An async train() in a sync worker: a loop of its own on the main thread."""

    def run(self, call: Job) -> None:
        import asyncio

        async def main() -> None:
            call.loop = asyncio.get_running_loop()
            call.task = asyncio.current_task()
            if call.cancel_requested:
                call.task.cancel()  # type: ignore[union-attr]
            await predict.run_async(self.model, call)

        self.cancels.current = call
        try:
            asyncio.run(main())
        finally:
            self.cancels.current = None

    def interrupt(self, call: Job, prediction_id: str) -> None:
        call.cancel_requested = True
        call.stop_transfers()
        if call.task is not None and call.loop is not None:
            call.loop.call_soon_threadsafe(call.task.cancel)


class Async(ServingMode):
    """An async run() (or train()): a task on the worker's loop."""

    def run(self, call: Job) -> Coroutine[Any, Any, None]:
        return predict.run_async(self.model, call)

    def interrupt(self, call: Job, prediction_id: str) -> None:
        call.cancel_requested = True
        call.stop_transfers()
        if call.task is not None:
            call.task.cancel()


class Threaded(Async):
    """A sync train() in an async worker: it runs in a thread of its own.

    Signals reach only the main thread (the event loop), so a cancel is raised in that
    thread between bytecodes instead: it stops Python code, not a blocking call; the
    parent's grace period (COGSERVE_CANCEL_TIMEOUT) covers the rest.
    """

    def run(self, call: Job) -> Coroutine[Any, Any, None]:
        return self._await_thread(call)

    async def _await_thread(self, call: Job) -> None:
        import asyncio

        done = asyncio.get_running_loop().run_in_executor(None, self._in_thread, call)
        while True:
            try:
                await asyncio.shield(done)
                return
            except asyncio.CancelledError:
                call.cancel_requested = True
                await _raise_in_thread(call)

    def _in_thread(self, call: Job) -> None:
        call.thread_id = threading.get_ident()
        try:
            predict.run_sync(self.model, call)
        finally:
            call.thread_id = None


async def _raise_in_thread(job: Job) -> None:
    import asyncio
    import ctypes

    while job.thread_id is not None and not job.cancel_raised:
        if not job.in_user_code:  # enter_user raises at the next step into user code
            return
        frame = sys._current_frames().get(job.thread_id)
        if frame is not None and not predict.in_critical_section(frame):
            job.cancel_raised = True
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(job.thread_id), ctypes.py_object(CancelationException))
            return
        await asyncio.sleep(0.02)


class Batched(ServingMode):
    """One run() call for a BATCH message's predictions (`worker/batch.py`): on the main
    thread in a sync worker, a task in an async one."""

    def __init__(self, model: LoadedModel, cancels: Cancels, on_main: bool) -> None:
        super().__init__(model, cancels)
        self.on_main = on_main

    def run(self, call: Batch) -> Coroutine[Any, Any, None] | None:
        if not self.on_main:
            # downloads block: off the loop, so other slots keep running
            return call.run(self.model, prepare_in_thread=predict.has_files(self.model))
        self.cancels.current = call
        try:
            drive(call.run(self.model, prepare_in_thread=False))
        finally:
            self.cancels.current = None
        return None

    def interrupt(self, call: Batch, prediction_id: str) -> None:
        if not call.cancel_member(prediction_id):
            return
        if not self.on_main:
            if call.task is not None:
                call.task.cancel()
        elif call.in_user_code:
            self.cancels.interrupt(call)


@dataclass(frozen=True)
class Modes:
    """A worker's modes, one per kind of call, chosen once (`choose`)."""

    predict: ServingMode
    train: ServingMode | None  # a trainer beside the predictor (cog.yaml `train:`)
    batch: ServingMode | None  # a @batch model's

    def call_for(self, message: protocol.Message, channel: Any, router: LogRouter,
                 downloads: Downloads) -> tuple[Call, ServingMode]:
        """The call a PREDICT or BATCH message asks for, and the mode that runs it."""
        cancels = self.predict.cancels
        if message.get(protocol.KIND) == ToWorker.BATCH:
            assert self.batch is not None, "a BATCH message for a model without @batch"
            return Batch(message["items"], channel, router, cancels, downloads), self.batch
        mode = self.train if message.get("mode") == Mode.TRAIN and self.train is not None \
            else self.predict
        return Job(message, channel.send, router, cancels, downloads), mode


def choose(model: LoadedModel, trainer: LoadedModel | None, cancels: Cancels) -> Modes:
    """The modes of a worker serving `model` (and `trainer`): an async run() makes an
    async worker (the event loop on the main thread), any other a sync one; train()
    need not agree with run() on async."""
    on_main = not model.is_async
    train_mode: ServingMode | None = None
    if on_main:
        predict_mode: ServingMode = Single(model, cancels)
        if trainer is not None:
            train_mode = (AsyncOnMain if trainer.is_async else Single)(trainer, cancels)
    else:
        predict_mode = Async(model, cancels)
        if trainer is not None:
            train_mode = (Async if trainer.is_async else Threaded)(trainer, cancels)
    batch_mode = Batched(model, cancels, on_main) if model.batch is not None else None
    return Modes(predict_mode, train_mode, batch_mode)


def drive(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine that never suspends to its end, in one step, without a loop."""
    try:
        coroutine.send(None)
    except StopIteration:
        return
    coroutine.close()
    raise RuntimeError("a sync worker's call suspended")
