"""One run() call of a `@batch` model for the predictions of a BATCH message.

Each prediction keeps its own `Job` (its folder, its input files, its terminal frame),
so the parent sees every prediction of the batch exactly as if it had run alone. What
is shared is the run() call: its lists are built from the members' inputs in order,
and its returned list is split back, item i to member i.

- An input that cannot be prepared (a download that fails) ends that member alone; the
  others run without it.
- An exception object in the returned list fails that member alone; an exception raised
  by run() (or a list of the wrong length) fails every member with the message.
- A cancel for one member ends it at once (`cancelled`), and its output is dropped when
  the call returns; the others complete. When the member cancelled is the last one
  still in the call, the call itself is cancelled the way a single run() is (a signal
  in a sync worker, `task.cancel()` in an async one), so a cancelled batch frees its
  worker.
- Logs and metrics written during run() cannot be told apart by item: each member
  still in the call gets them all. `current_scope().context` is the requests' context
  when they all sent the same one, else empty (one request's secrets never reach
  another's run()).

For the cancel machinery (`predict.Cancels`, `modes.Batched`) a `Batch` stands
where a single `Job` would: it has the same flags.
"""

from __future__ import annotations

import inspect
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from cogserve.exceptions import CancelationException
from cogserve.model.loader import LoadedModel
from cogserve.sdk.scope import Scope, bind_scope, unbind_scope
from cogserve.wire import protocol
from cogserve.worker import inputs, outputs, tempdirs
from cogserve.worker.logs import LogRouter, LogTarget
from cogserve.worker.predict import Cancels, Job, RaisedIn, enter_user

if TYPE_CHECKING:
    import asyncio


class Channel(Protocol):
    """The worker's data channel (`ipc.SyncChannel`), as a batch writes to it."""

    def send(self, message: protocol.Message) -> None: ...

    def send_many(self, messages: list[protocol.Message]) -> None: ...


class Batch:
    """The jobs of one BATCH message while their run() call is under way."""

    def __init__(self, items: list[protocol.Message], channel: Channel, router: LogRouter,
                 cancels: Cancels, downloads: inputs.Downloads) -> None:
        self._channel = channel
        self._held: list[protocol.Message] | None = None  # frames kept for one write
        self.jobs = jobs = [Job(item, self._emit, router, cancels, downloads)
                            for item in items]
        self.id = jobs[0].id  # names the batch in the router and the logs
        self.called: list[Job] = []  # the members in the run() call, in its lists' order
        self.live: list[Job] = []  # those of them that have not ended
        self.running = False  # its members are prepared: a cancel ends one at once
        self.prepared: list[dict[str, Any]] | None = None  # `prepare`'s result, once made
        self._lock = threading.Lock()  # the control thread ends members too
        # the same flags as a Job's, for the signal handler (`predict.BatchCall`)
        self.cancel_requested = False
        self.in_user_code = False
        self.cancel_raised = False
        self.cancel_deferred = False
        self.task: asyncio.Task[Any] | None = None
        self.logs = LogTarget(self._log)
        contexts = [job.message.get("context") or {} for job in jobs]
        shared = contexts[0] if all(c == contexts[0] for c in contexts) else {}
        self.scope = Scope(self._metric, shared)

    def _emit(self, message: protocol.Message) -> None:
        """Every frame of the members: written at once, or kept while the returned list
        is split back so that a batch's terminal frames leave in one write (16 writes
        were 6% of the worker's time in bench scenario 11)."""
        held = self._held
        if held is None:
            self._channel.send(message)
        else:
            held.append(message)

    def _hold(self) -> None:
        self._held = []

    def _release(self) -> None:
        held, self._held = self._held, None
        if held:
            self._channel.send_many(held)

    def members(self) -> list[str]:
        return [job.id for job in self.jobs]

    def cancel_member(self, prediction_id: str) -> bool:
        """A cancel for one member. Returns True when the run() call itself must now be
        interrupted (it was the last member still in it); otherwise the member ends here
        and now, or (before the call) is left out of it."""
        with self._lock:
            job = next((j for j in self.jobs if j.id == prediction_id), None)
            if job is None or job.cancel_requested:
                return False
            job.cancel_requested = True
            job.stop_transfers()
            if not self.running:
                return False  # the main thread leaves it out of the call
            if job not in self.live:
                return False  # already ended
            if len(self.live) == 1:
                self.cancel_requested = True
                return True
            self.live.remove(job)
        job.keep_folder = True  # run() may still read its input files
        job.logs.flush()
        job.send(protocol.cancelled(job.id))
        return False

    def take(self, job: Job) -> bool:
        """End `job` from the main path: True if it was still in the call (and now is
        not), False if a cancel ended it meanwhile."""
        with self._lock:
            if job not in self.live:
                return False
            self.live.remove(job)
            return True

    def _log(self, source: str, data: str) -> None:
        for job in list(self.live):
            job.send(protocol.log(job.id, source, data))

    def _metric(self, name: str, value: Any, mode: str) -> None:
        for job in list(self.live):
            job.send(protocol.metric(job.id, name, value, mode))

    # ------------------------------------------------------------ the phases of a run

    def prepare(self, model: LoadedModel) -> list[dict[str, Any]]:
        """Each member's inputs, in its own folder; those that fail or were cancelled
        end here. Returns the kwargs of the members that go into the call. Once: a sync
        worker's reader thread prepares a batch before its turn (`worker/main.py`)."""
        if self.prepared is not None:
            return self.prepared
        cancels = self.jobs[0].cancels
        prepared: list[tuple[Job, dict[str, Any]]] = []
        for job in self.jobs:
            cancels.take_early(job)
            if protocol.TRACE in job.message:
                from cogserve.worker import tracing

                job.span = tracing.open_span(job.id, job.message[protocol.TRACE])
                tracing.detach(job.span[1])  # the context is per call, not per member
            if not job.cancel_requested:
                try:
                    kwargs = inputs.prepare(model.signature, job.raw_input(), job)
                except CancelationException:
                    pass
                except Exception as exc:  # noqa: BLE001 - this member's input: it alone fails
                    job.fail(exc)
                    continue
                else:
                    prepared.append((job, kwargs))
                    continue
            job.send(protocol.cancelled(job.id))
        with self._lock:
            # a cancel that came during the downloads leaves its member out
            kept = [(job, kwargs) for job, kwargs in prepared if not job.cancel_requested]
            for job, _ in prepared:
                if job.cancel_requested:
                    job.send(protocol.cancelled(job.id))
            self.called = [job for job, _ in kept]
            self.live = list(self.called)
            self.running = bool(kept)
            self.prepared = [kwargs for _, kwargs in kept]
        return self.prepared

    def arguments(self, model: LoadedModel, prepared: list[dict[str, Any]]) -> dict[str, Any]:
        """run()'s keyword arguments: one list per input, a value per member, in order."""
        return {spec.name: [kwargs[spec.name] for kwargs in prepared]
                for spec in model.signature.inputs}

    def bind(self) -> tuple[Any, Any, Any]:
        """Logs, metrics and tempfiles of the call: shared by the members (see above)."""
        first = self.live[0]
        return (first.router.bind(f"batch:{self.id}", self.logs), bind_scope(self.scope),
                tempdirs.bind(first.tmpdir))

    def unbind(self, tokens: tuple[Any, Any, Any]) -> None:
        log_token, scope_token, tmp_token = tokens
        tempdirs.unbind(tmp_token)
        unbind_scope(scope_token)
        self.jobs[0].router.unbind(f"batch:{self.id}", log_token)

    def finish(self, model: LoadedModel, result: Any, started: float) -> None:
        """Split the returned list back: item i is member i's output or failure."""
        self.logs.flush()
        members = self.called
        if isinstance(result, str | bytes) or not isinstance(result, Sequence):
            self.fail(TypeError(f"@batch: run() returned {type(result).__name__}, not a list "
                                f"of {len(members)} outputs (one per request)"))
            return
        if len(result) != len(members):
            self.fail(ValueError(f"@batch: run() returned {len(result)} outputs for a batch "
                                 f"of {len(members)} requests"))
            return
        spec = model.signature.output
        elapsed = time.perf_counter() - started
        self._hold()
        try:
            for job, item in zip(members, result, strict=True):
                if not self.take(job):
                    continue  # cancelled while the call ran: its output is dropped
                if isinstance(item, BaseException):
                    job.fail(item, RaisedIn.RUN)
                    continue
                try:
                    final = outputs.encode_output(item, spec.type)
                except Exception as exc:  # noqa: BLE001 - this output: it alone fails
                    job.fail(exc, RaisedIn.RUN)
                    continue
                job.send(protocol.done(job.id, final, elapsed))
        finally:
            self._release()

    def fail(self, exc: BaseException, raised_in: RaisedIn | None = None) -> None:
        """run() raised (or broke the list's contract): every member still in it fails."""
        self.logs.flush()
        for job in list(self.live):
            if self.take(job):
                job.fail(exc, raised_in)

    def cancelled(self) -> None:
        self.logs.flush()
        for job in list(self.live):
            if self.take(job):
                job.send(protocol.cancelled(job.id))

    def cleanup(self) -> None:
        """Folders and open files of every member (a cancelled one kept its own until
        the call was over)."""
        for job in self.jobs:
            job.cleanup()


# ------------------------------------------------------------ the call

    async def run(self, model: LoadedModel, prepare_in_thread: bool) -> None:
        """Prepare, call run() once, split its list back; every member ends here.

        The one body of both kinds of worker (`modes.Batched`): a sync worker drives it
        on its main thread, where nothing in it suspends; an async worker runs it as a
        task, its inputs prepared in a thread when they have files to fetch
        (`prepare_in_thread`), and an async run() awaited.
        """
        started = time.perf_counter()
        tokens: tuple[Any, Any, Any] | None = None
        try:
            if prepare_in_thread:
                import asyncio
                import contextvars

                prepared = await asyncio.get_running_loop().run_in_executor(
                    None, contextvars.copy_context().run, self.prepare, model)
            else:
                prepared = self.prepare(model)
            if not prepared:
                return
            arguments = self.arguments(model, prepared)
            tokens = self.bind()
            try:
                enter_user(self)
                result = model.run(**arguments)
                if inspect.isawaitable(result):
                    result = await result
            finally:
                self.in_user_code = False
            self.finish(model, result, started)
        except CancelationException:
            self.cancelled()
        except BaseException as exc:  # noqa: BLE001 - the model's failure is the batch's
            if _task_cancelled(exc):
                self.cancelled()
            elif isinstance(exc, KeyboardInterrupt | SystemExit):
                self.fail(RuntimeError(f"run() raised {type(exc).__name__}"))
            else:
                self.fail(exc, RaisedIn.RUN)
        finally:
            self.in_user_code = False
            if tokens is not None:
                self.unbind(tokens)
            self.cleanup()

    def never_ran(self) -> None:
        """Its task was cancelled before its first step: nothing else tells the parent."""
        for job in self.jobs:
            job.send(protocol.cancelled(job.id))
        self.cleanup()


def _task_cancelled(exc: BaseException) -> bool:
    """`exc` is asyncio's CancelledError (a sync worker never imports asyncio)."""
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(exc, asyncio.CancelledError)
