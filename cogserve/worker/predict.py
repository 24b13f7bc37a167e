"""Run one prediction inside the worker: inputs in, events out, cancel honoured.

A sync run() executes on the main thread so that a cancel can interrupt it with a
signal (SIGUSR1 -> CancelationException), even inside `time.sleep` or a busy loop.
An async run() is a task on the worker's event loop; cancel is `task.cancel()`.
"""

from __future__ import annotations

import contextvars
import inspect
import pathlib
import signal
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from cogserve.exceptions import CancelationException, FetchError
from cogserve.model.loader import LoadedModel
from cogserve.model.specs import TypeKind
from cogserve.sdk.scope import Scope, bind_scope, unbind_scope
from cogserve.wire import ipc, protocol
from cogserve.worker import handover, inputs, logs, outputs, tempdirs
from cogserve.worker.logs import LogRouter, LogTarget
from cogserve.worker.transfers import StopReason, Transfers

if TYPE_CHECKING:
    import asyncio

Send = Callable[[protocol.Message], None]


class BatchCall(Protocol):
    """A `@batch` run() call in progress (`worker/batch.py`'s `Batch`), as the cancel
    machinery sees it: a Job's flags, and its members' cancels."""

    cancel_requested: bool
    in_user_code: bool
    cancel_raised: bool
    cancel_deferred: bool

    def members(self) -> list[str]: ...

    def cancel_member(self, prediction_id: str) -> bool: ...


class Job:
    """One prediction's state in the worker."""

    def __init__(self, message: protocol.Message, send: Send, router: LogRouter,
                 cancels: Cancels, downloads: inputs.Downloads) -> None:
        self.id: str = message["id"]
        self.message = message
        self._send = send
        self.router = router
        self.cancels = cancels
        self.downloads = downloads
        self.cancel_requested = False
        self.in_user_code = False
        self.cancel_raised = False
        self.cancel_deferred = False  # the signal came mid-write; signal again
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread_id: int | None = None  # a sync train() running off the main thread
        self.task: asyncio.Task[Any] | None = None
        self.logs = LogTarget(self._log)
        self.scope = Scope(self._metric, message.get("context"))
        self._tmpdir: pathlib.Path | None = None
        self._memdir: pathlib.Path | None = None
        self._no_memdir = False  # the worker had none to give: ask once
        self.opened: list[Any] = []
        self.files_sent = False
        # a batch member cancelled mid-call: the call may still read its input files;
        # they go with the batch's cleanup, not with its terminal frame
        self.keep_folder = False
        self.span: Any = None  # with tracing on: (span, context token), see worker/tracing.py
        self.transfers: Transfers | None = None  # downloads of file inputs, if any

    def new_transfers(self) -> Transfers:
        """The Transfers of this prediction's downloads (made only if it has files)."""
        self.transfers = Transfers()
        if self.cancel_requested:  # a cancel that came before: stop them at once
            self.transfers.stop(StopReason.CANCEL)
        return self.transfers

    def never_ran(self) -> None:
        """Its task was cancelled before its first step: the coroutine never ran, so
        nothing else will tell the parent, which would wait for the grace-period kill."""
        self.send(protocol.cancelled(self.id))

    def stop_transfers(self) -> None:
        """A cancel: downloads in progress stop now, not when they are complete."""
        if self.transfers is not None:
            self.transfers.stop(StopReason.CANCEL)

    def send(self, message: protocol.Message) -> None:
        """Send one of this prediction's messages (built by `cogserve.wire.protocol`)."""
        if message.get("files"):
            self.files_sent = True
        if message[protocol.KIND] in protocol.TERMINAL:
            # fd 1/2 output written just before the end belongs to this one
            if self.router.settle():
                self.logs.flush()
            self._release_folder(message)
            self.cancels.mark_finished(self.id)
            if (tally := self.downloads.take_tally()) is not None:
                protocol.report_downloads(message, tally)
            if self.span is not None:
                from cogserve.worker import tracing

                tracing.finish(self.span[0], message)
        self._send(message)

    def _release_folder(self, message: protocol.Message) -> None:
        """Before the terminal message: remove the prediction's folder, or hand it over.

        Removing it first means a client that has its response finds no file left. If a
        file output was reported, the parent still has to read it (uploads may be under
        way), so the terminal message names the folder and the parent removes it.
        """
        if self.keep_folder:
            return
        for handle in self.opened:
            try:
                handle.close()
            except Exception:  # noqa: BLE001 - best effort
                pass
        self.opened.clear()
        if self._tmpdir is None and self._memdir is None:
            return  # no file input and no tempfile: most predictions
        if self.files_sent:
            # an output may be one of these files (a model that returns its input)
            protocol.hand_over_folders(message, [str(f) for f in (self._tmpdir, self._memdir)
                                                 if f is not None])
            self._tmpdir = self._memdir = None
        else:
            self._drop_folder()

    def _log(self, source: str, data: str) -> None:
        self.send(protocol.log(self.id, source, data))
        if self.cancel_deferred:
            self._raise_deferred_cancel()

    def _raise_deferred_cancel(self) -> None:
        """A cancel signal came while this line was being written: the frame is out now,
        so raise it here, on the way back to the model's print(). A model that prints
        faster than the parent reads spends nearly all its time inside that write, so
        waiting for a signal to land elsewhere could take until the grace-period kill."""
        if (threading.get_ident() == threading.main_thread().ident and self.in_user_code
                and not self.cancel_raised and self.cancels.current is self):
            self.cancel_deferred = False
            self.cancel_raised = True
            raise CancelationException()

    def _metric(self, name: str, value: Any, mode: str) -> None:
        self.send(protocol.metric(self.id, name, value, mode))

    def raw_input(self) -> dict[str, Any]:
        return handover.read_input(self.message)

    def tmpdir(self) -> pathlib.Path:
        """This prediction's folder (inputs, and the model's tempfile files), made on first use."""
        if self._tmpdir is None:
            self._tmpdir = tempdirs.take()
        return self._tmpdir

    def memdir(self) -> pathlib.Path | None:
        """This prediction's folder in memory (data: URL inputs), made on first use; None
        when the worker has none."""
        if self._memdir is None and not self._no_memdir:
            self._memdir = tempdirs.take_memory()
            self._no_memdir = self._memdir is None
        return self._memdir

    def _drop_folder(self) -> None:
        """Empty the folders for reuse (`tempdirs.release`); this job has none after."""
        for folder in (self._tmpdir, self._memdir):
            if folder is not None:
                tempdirs.release(folder)
        self._tmpdir = self._memdir = None

    def bind(self) -> tuple[Any, Any, Any]:
        """Route this context's logs, metrics and tempfile folder to this prediction."""
        if protocol.TRACE in self.message:
            from cogserve.worker import tracing

            self.span = tracing.open_span(self.id, self.message[protocol.TRACE])
        return (self.router.bind(self.id, self.logs), bind_scope(self.scope),
                tempdirs.bind(self.tmpdir))

    def unbind(self, tokens: tuple[Any, Any, Any]) -> None:
        log_token, scope_token, tmp_token = tokens
        tempdirs.unbind(tmp_token)
        unbind_scope(scope_token)
        self.router.unbind(self.id, log_token)
        if self.span is not None:
            from cogserve.worker import tracing

            tracing.detach(self.span[1])
        self.cleanup()

    def cleanup(self) -> None:
        for handle in self.opened:
            try:
                handle.close()
            except Exception:  # noqa: BLE001 - best effort
                pass
        self._drop_folder()

    def fail(self, exc: BaseException, raised_in: RaisedIn | None = None) -> None:
        """End the prediction as failed. An exception of the model's own (`raised_in`
        says where) is worded as the reference words it: `Prediction failed: Prediction
        failed: ValueError: boom`, `Prediction failed: Generator iteration error: ...`."""
        if isinstance(exc, outputs.OutputTypeError | FetchError):  # our frames hide the point
            text = f"{exc}\n"
        else:
            import traceback  # only when a prediction fails: not on a worker's way to READY

            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.logs.write("stderr", text)
        self.logs.flush()
        if raised_in is None or isinstance(exc, outputs.OutputTypeError | FetchError):
            message = str(exc) or type(exc).__name__
        else:
            message = f"Prediction failed: {raised_in}{type(exc).__name__}: {exc}"
        self.send(protocol.failed(self.id, message))


class RaisedIn(StrEnum):
    """Where a model's exception came from, as the reference's error text names it."""

    RUN = "Prediction failed: "
    ITERATION = "Generator iteration error: "


# ---------------------------------------------------------------- sync runs

# our own modules that write to the parent: a cancel must not interrupt them halfway
_CRITICAL_FILES = frozenset({ipc.__file__, logs.__file__})
_EARLY_CANCEL_TTL = 5.0


class Interrupter(Protocol):
    """What stops a running call for a cancel: its serving mode (`worker/modes.py`)."""

    def interrupt(self, call: Any, prediction_id: str) -> None: ...


class Cancels:
    """The worker's cancel bookkeeping, one per worker (made where it starts serving):
    the calls running and their modes (`cancel` asks the mode), the job running on the
    main thread (the one SIGUSR1 interrupts), cancels that beat their predict message
    (two sockets), and the ids that just ended (so a late cancel is not kept for a new
    prediction that reuses the id)."""

    def __init__(self) -> None:
        self.current: Job | BatchCall | None = None  # the sync job (or batch) on the main thread
        self._running: dict[str, tuple[Any, Interrupter]] = {}  # prediction id -> call, mode
        self._early: dict[str, float] = {}  # id -> when
        self._finished: OrderedDict[str, float] = OrderedDict()  # id -> when, oldest first
        self._finished_lock = threading.Lock()  # threaded sync train() jobs end off-loop

    def install_handler(self) -> None:
        """A sync worker: SIGUSR1 raises CancelationException in the main thread's job."""
        signal.signal(signal.SIGUSR1, self._on_signal)

    def _on_signal(self, signum: int, frame: Any) -> None:
        job = self.current
        if job is None or not job.cancel_requested or not job.in_user_code \
                or job.cancel_raised:
            return
        if in_critical_section(frame):
            # mid-write of a frame to the parent (a print, a log line): raising here would
            # cut the frame in half and corrupt the channel. The redeliver thread signals
            # again once the write is done.
            job.cancel_deferred = True
            return
        job.cancel_raised = True
        raise CancelationException()

    def begin(self, call: Job | BatchCall, mode: Interrupter) -> None:
        """`call` starts under `mode` (its members, for a batch, whose own early
        cancels `Batch.prepare` takes); a cancel that came before a Job applies now."""
        if isinstance(call, Job):
            self._running[call.id] = (call, mode)
            self.take_early(call)
        else:
            for member in call.members():
                self._running[member] = (call, mode)

    def end(self, call: Job | BatchCall) -> None:
        for member in [call.id] if isinstance(call, Job) else call.members():
            self._running.pop(member, None)

    def cancel(self, prediction_id: str) -> None:
        """The one way a cancel from the parent is handled, in both kinds of worker: the
        mode of the call that runs it interrupts it; a cancel that overtook its
        prediction (two sockets) is kept for it."""
        entry = self._running.get(prediction_id)
        if entry is None:
            self.remember_early(prediction_id)
            entry = self._running.get(prediction_id)  # it may have started meanwhile
            if entry is None:
                return
        call, mode = entry
        mode.interrupt(call, prediction_id)

    def interrupt(self, job: Job | BatchCall) -> None:
        """Raise CancelationException in the main thread's run() (signalling again while
        the handler had to defer)."""
        _signal_main()
        threading.Thread(target=self._redeliver, args=(job,), daemon=True,
                         name="cogserve-cancel").start()

    def _redeliver(self, job: Job | BatchCall) -> None:
        """Signal again while the handler had to defer, until run() got its exception."""
        while self.current is job and not job.cancel_raised:
            time.sleep(0.02)
            if job.cancel_deferred and job.in_user_code:
                job.cancel_deferred = False
                _signal_main()

    def mark_finished(self, prediction_id: str) -> None:
        now = time.monotonic()
        finished = self._finished
        with self._finished_lock:
            finished[prediction_id] = now
            finished.move_to_end(prediction_id)
            while finished:
                oldest = next(iter(finished.values()))
                if now - oldest <= _EARLY_CANCEL_TTL:
                    break
                finished.popitem(last=False)

    def remember_early(self, prediction_id: str) -> None:
        """A cancel can overtake its prediction (two sockets): keep it for a few seconds.

        Unless that id just ended here: then the cancel came late, not early, and keeping
        it would cancel a new prediction that reuses the id.
        """
        now = time.monotonic()
        if now - self._finished.get(prediction_id, -_EARLY_CANCEL_TTL * 2) \
                <= _EARLY_CANCEL_TTL:
            return
        for key, when in list(self._early.items()):
            if now - when > _EARLY_CANCEL_TTL:
                self._early.pop(key, None)
        self._early[prediction_id] = now

    def take_early(self, job: Job) -> None:
        """A new job: a cancel that came before it applies now."""
        when = self._early.pop(job.id, None)
        if when is not None and time.monotonic() - when <= _EARLY_CANCEL_TTL:
            job.cancel_requested = True


def in_critical_section(frame: Any) -> bool:
    """`frame` or a caller is in our code that writes to the parent (see _CRITICAL_FILES)."""
    while frame is not None:
        if frame.f_code.co_filename in _CRITICAL_FILES:
            return True
        frame = frame.f_back
    return False


def _signal_main() -> None:
    """SIGUSR1 to the main thread itself: a signal sent to the process may be taken by
    any thread, and then a main thread blocked in time.sleep() never wakes to run the
    handler."""
    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGUSR1)


def enter_user(job: Job | BatchCall) -> None:
    """Entering the model's code: a cancel that came before raises now."""
    job.in_user_code = True
    if job.cancel_requested and not job.cancel_raised:
        job.cancel_raised = True
        raise CancelationException()


def run_sync(model: LoadedModel, job: Job) -> None:
    """A sync run(): on the main thread (`modes.Single`) or a thread (`modes.Threaded`)."""
    tokens = job.bind()
    started = time.perf_counter()
    spec = model.signature.output
    raised_in: RaisedIn | None = None  # not yet the model's code
    try:
        kwargs = inputs.prepare(model.signature, job.raw_input(), job)
        enter_user(job)
        raised_in = RaisedIn.RUN
        result = model.run(**kwargs)
        if spec.iterator:
            raised_in = RaisedIn.ITERATION
            iterator = iter(result)
            while True:
                try:
                    item = next(iterator)
                except StopIteration:
                    break
                job.in_user_code = False
                job.logs.flush()
                job.send(protocol.output(job.id, outputs.encode_output(item, spec.type)))
                try:
                    enter_user(job)
                except CancelationException as exc:
                    _throw(iterator, exc)
                    raise
            final: protocol.Message = {"output": None}
        else:
            job.in_user_code = False
            final = outputs.encode_output(result, spec.type)
        job.in_user_code = False
        job.logs.flush()
        job.send(protocol.done(job.id, final, time.perf_counter() - started))
    except CancelationException:
        job.in_user_code = False
        job.logs.flush()
        job.send(protocol.cancelled(job.id))
    except BaseException as exc:  # noqa: BLE001 - the model's failure is the prediction's
        job.in_user_code = False
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            job.fail(RuntimeError(f"run() raised {type(exc).__name__}"))
        else:
            job.fail(exc, raised_in)
    finally:
        job.in_user_code = False
        job.unbind(tokens)


def _throw(iterator: Any, exc: BaseException) -> None:
    """Give a generator the chance to clean up on cancel, as Cog does."""
    throw = getattr(iterator, "throw", None)
    if throw is None:
        return
    try:
        throw(exc)
    except BaseException:  # noqa: BLE001 - the cancel is re-raised by the caller
        pass


# ---------------------------------------------------------------- async runs


async def run_async(model: LoadedModel, job: Job) -> None:
    import asyncio

    loop = asyncio.get_running_loop()
    tokens = job.bind()
    started = time.perf_counter()
    spec = model.signature.output
    raised_in: RaisedIn | None = None  # not yet the model's code
    try:
        raw = job.raw_input()
        if has_files(model):
            kwargs = await loop.run_in_executor(  # in this context: logs, trace
                None, contextvars.copy_context().run, inputs.prepare, model.signature, raw,
                job)
        else:
            kwargs = inputs.prepare(model.signature, raw, job)
        raised_in = RaisedIn.RUN
        result = model.run(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        final: protocol.Message = {"output": None}
        if spec.iterator:
            raised_in = RaisedIn.ITERATION
            if hasattr(result, "__aiter__"):
                async for item in result:
                    job.logs.flush()
                    job.send(protocol.output(job.id, outputs.encode_output(item, spec.type)))
            else:
                for item in result:
                    job.logs.flush()
                    job.send(protocol.output(job.id, outputs.encode_output(item, spec.type)))
                    await asyncio.sleep(0)
        else:
            final = outputs.encode_output(result, spec.type)
        job.logs.flush()
        job.send(protocol.done(job.id, final, time.perf_counter() - started))
    except (asyncio.CancelledError, CancelationException):
        job.logs.flush()
        job.send(protocol.cancelled(job.id))
    except BaseException as exc:  # noqa: BLE001
        job.fail(exc, raised_in)
    finally:
        job.unbind(tokens)


def has_files(model: LoadedModel) -> bool:
    for spec in model.signature.inputs:
        t = spec.type.item if spec.type.kind == TypeKind.LIST and spec.type.item else spec.type
        if t.kind in (TypeKind.PATH, TypeKind.FILE):
            return True
    return False


def run_healthcheck(model: LoadedModel) -> tuple[protocol.UserHealth, str | None]:
    """Run a sync user healthcheck (in the calling thread)."""
    try:
        result = run_to_end(model.healthcheck())
    except Exception as exc:  # noqa: BLE001
        return protocol.UserHealth.UNHEALTHY, healthcheck_raised(exc)
    return healthcheck_verdict(result)


# The reference's texts for `user_healthcheck_error` (coglet-python predictor.rs)
HEALTHCHECK_FALSE = "Healthcheck failed: user-defined healthcheck returned False"


def healthcheck_verdict(result: Any) -> tuple[protocol.UserHealth, str | None]:
    if result is False:
        return protocol.UserHealth.UNHEALTHY, HEALTHCHECK_FALSE
    return protocol.UserHealth.HEALTHY, None


def healthcheck_raised(exc: BaseException) -> str:
    return f"Healthcheck failed: {type(exc).__name__}: {exc}"


def run_to_end(result: Any) -> Any:
    """`result`, or what it resolves to when it is awaitable (an async setup() or
    healthcheck() called from the sync serve loop): run in an event loop of its own."""
    if inspect.isawaitable(result):
        import asyncio

        return asyncio.run(_await(result))
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable  # asyncio.run takes a coroutine, not any awaitable


