"""The parent's single owner of runtime state: health, predictions, the queue.

HTTP front ends (Cog's routes, V2) and the CLI call `create`, `cancel` and `health`;
what the runtime refuses is raised as a `cogserve.runtime.errors.Refusal`, which each of
them maps to its own answer. The workers' messages arrive through `_on_control` /
`_on_data`. Worker processes and their slots belong to the `Pool` (`runtime/pool.py`).
A slot is taken before a prediction is sent to a worker and given back as soon as its
terminal message arrives, before any response is written, so a sequential client never
sees 409. With `--queue-size` a
prediction that finds no free slot waits in the `Backlog` instead of getting 409.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

import cogserve
from cogserve import envvars, protocol
from cogserve.config import ModelConfig, load_config
from cogserve.envvars import env_float, env_int, env_text
from cogserve.exceptions import DefinitionError
from cogserve.netpolicy import URLPolicy
from cogserve.protocol import FromWorker, Mode, UserHealth
from cogserve.runtime import handover
from cogserve.runtime.backlog import Backlog
from cogserve.runtime.errors import (
    AlreadyRunning,
    AtCapacity,
    InputNotSendable,
    NotReady,
    QueueFull,
    UnknownPrediction,
)
from cogserve.runtime.events import EventBus, RuntimeEvent
from cogserve.runtime.history import DEFAULT_CAPACITY, DEFAULT_MAX_BYTES, EventHistory
from cogserve.runtime.outputs import FileOutputs
from cogserve.runtime.pool import Member, Pool, Restart, WorkerState
from cogserve.runtime.prediction import Listener, Prediction, iso, now
from cogserve.runtime.resolver import Resolver
from cogserve.runtime.states import SERVING, Health, Status, WebhookEvent
from cogserve.runtime.store import (
    BYTES_VARIABLE,
    COUNT_VARIABLE,
    DEFAULT_BYTES,
    DEFAULT_COUNT,
    FinishedStore,
)
from cogserve.runtime.supervisor import WorkerProcess, WorkerSpec, describe_exit
from cogserve.validation import FieldError, InputValidator

if TYPE_CHECKING:
    from cogserve.envs.model_env import ModelEnvironment
    from cogserve.observability import ObservabilityOptions

log = logging.getLogger("cogserve")


@dataclass
class Settings:
    """Runtime knobs, from flags and the environment variables of the runtime spec."""

    concurrency: int | None = None
    setup_timeout: float | None = None
    cancel_timeout: float = 5.0
    drain_timeout: float = 10.0  # seconds in-flight predictions get at shutdown
    healthcheck_timeout: float = 5.0
    upload_url: str | None = None
    url_policy: URLPolicy = URLPolicy.ANY  # what webhooks, uploads and downloads may reach
    model_name: str | None = None
    model_version: str | None = None
    id_prefix: str = ""  # generated prediction ids start with it (cogserve.deploy.ray)
    stream_history: int = DEFAULT_CAPACITY  # SSE replay buffer, in events
    stream_history_bytes: int = DEFAULT_MAX_BYTES  # ... and in bytes
    recent_count: int = DEFAULT_COUNT  # finished predictions kept for GET / PUT retries
    recent_bytes: int = DEFAULT_BYTES
    playground: bool = True  # the browser page at /docs (--no-playground)
    # metrics on/off and their port (`cogserve serve` fills it; None: the defaults)
    observability: ObservabilityOptions | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    environment: ModelEnvironment | None = None  # the model's own packages (cogserve/envs)
    queue_size: int = 0  # predictions that may wait for a slot; 0 = Cog's immediate 409
    queue_timeout: float | None = None  # seconds one may wait there before it fails
    predict_timeout: float | None = None  # seconds a prediction may run (its deadline)
    workers: int = 1  # worker processes, each with the model's slots
    gpus: list[str] = field(default_factory=list)  # CUDA_VISIBLE_DEVICES, round-robin
    predictor: str | None = None  # --predictor, kept when --reload re-reads cog.yaml

    @classmethod
    def from_env(cls, config: ModelConfig, upload_url: str | None = None) -> Settings:
        envvars.check_worker_variables()  # refused here, at start, not in a prediction
        setup_timeout = env_float("COG_SETUP_TIMEOUT", None)
        return cls(
            concurrency=env_int("COG_MAX_CONCURRENCY", None) or config.concurrency,
            setup_timeout=setup_timeout if setup_timeout else None,
            cancel_timeout=env_float("COGSERVE_CANCEL_TIMEOUT", 5.0) or 5.0,
            drain_timeout=_non_negative(env_float("COGSERVE_DRAIN_TIMEOUT", 10.0), 10.0),
            healthcheck_timeout=env_float("COGSERVE_HEALTHCHECK_TIMEOUT", 5.0) or 5.0,
            upload_url=upload_url,
            url_policy=URLPolicy.from_env(),
            stream_history=env_int("COG_STREAM_HISTORY_CAPACITY", DEFAULT_CAPACITY,
                                   minimum=0) or 0,
            stream_history_bytes=env_int("COG_STREAM_HISTORY_BYTES", DEFAULT_MAX_BYTES,
                                         minimum=0) or 0,
            recent_count=env_int(COUNT_VARIABLE, DEFAULT_COUNT) or 0,
            recent_bytes=env_int(BYTES_VARIABLE, DEFAULT_BYTES) or 0,
            extra_env=config.environment,
            queue_size=max(0, env_int("COGSERVE_QUEUE_SIZE", 0) or 0),
            queue_timeout=env_float("COGSERVE_QUEUE_TIMEOUT", None) or None,
            predict_timeout=env_float("COGSERVE_PREDICT_TIMEOUT", None) or None,
            workers=max(1, env_int("COGSERVE_WORKERS", 1) or 1),
            gpus=parse_gpus(env_text("COGSERVE_GPUS")),
        )


class Service:
    def __init__(self, config: ModelConfig, settings: Settings, *, gate: bool = False,
                 on_setup_log: Callable[[str], None] | None = None) -> None:
        self.config = config
        self.settings = settings
        self.setup: dict[str, Any] = {"started_at": None, "completed_at": None,
                                      "status": Status.STARTING, "logs": ""}
        self._setup_logs: list[str] = []
        self._setup_open = False  # the setup document describes a (re)start under way
        self.schema: dict[str, Any] | None = None
        self.validators: dict[Mode, InputValidator] = {}
        # what runs the model, as its worker reports it with the schema: `python_sdk` (the
        # `cog` version the model imports) and `python`
        self.versions: dict[str, str] = {}
        self.is_async = False
        self.streaming = False
        self.has_healthcheck = False
        self.pool = Pool(settings.workers, settings.gpus)
        self.backlog: Backlog | None = None
        if settings.queue_size > 0:
            self.backlog = Backlog(settings.queue_size, settings.queue_timeout,
                                   self._queue_timed_out)
        self._config_error: str | None = None  # cog.yaml --reload could not read
        self._mean_run = 1.0  # seconds, moving average: the queue's Retry-After estimate
        self.predictions: dict[str, Prediction] = {}  # queued and running
        self.recent = FinishedStore(settings.recent_count, settings.recent_bytes)
        self.fatal_reason: str | None = None
        # the pool was READY when it last settled: a STARTING now is a worker on its way
        # back (an ignored cancel, a crash in a pool, a reload), not a server that has
        # not started yet (see `restarting`)
        self._served = False
        self.ready = asyncio.Event()  # set once setup has finished, either way
        self.shutting_down = False
        self._health_waiters: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._health_seq = 0
        # One folder for all of this server's temporary files: the worker's TMPDIR (so
        # its prediction folders and the model's tempfiles land here) and input spill
        # files; with several workers, one subfolder each. A worker's folder is emptied
        # when it (re)starts; the whole folder is removed when the server stops.
        self.tmp_root = tempfile.mkdtemp(prefix=protocol.SERVER_DIR_PREFIX)
        self._tmp_dirs = {self.tmp_root}
        if len(self.pool) > 1:
            for member in self.pool.members:
                member.tmpdir = os.path.join(self.tmp_root, f"worker-{member.index}")
                self._tmp_dirs.add(member.tmpdir)
        else:
            self.pool.members[0].tmpdir = self.tmp_root
        self.on_schema: list[Callable[[], None]] = []
        # awaited after the last prediction drained (e.g. queued webhooks get to finish)
        self.on_drain: list[Callable[[], Awaitable[None]]] = []
        self.on_setup_log = on_setup_log  # `cogserve predict` prints setup's output as it comes
        # `cogserve predict`: the worker stops after its schema and waits for `go()`
        # before setup(), so invalid input costs no setup
        self.gate = gate
        self._building: asyncio.Task[None] | None = None  # the model's environment
        self.events = EventBus()  # what happens here, for metrics and tracing
        # the parent's name resolution for what connects out (uploads here, webhooks in
        # `assembly`): one per server, so retries to a dead name share its cached answer
        self.resolver = Resolver(settings.url_policy)
        self.file_outputs = FileOutputs(settings.upload_url, self.events, self.resolver)
        self._setup_began = 0.0  # monotonic, for the setup duration

    # ------------------------------------------------------------ lifecycle

    @property
    def status(self) -> Health:
        """The server's state: derived from its workers' (see `Pool.state`)."""
        return _HEALTH_OF[self.pool.state]

    async def start(self) -> None:
        self._open_setup()
        environment = self.settings.environment
        if environment is not None and environment.find_ready() is None:
            # a build takes minutes: meanwhile health answers STARTING, uv's output goes
            # to setup.logs, and the workers start once the environment is ready
            self._building = asyncio.get_running_loop().create_task(
                self._build_then_launch(environment))
            return
        await self._launch()

    async def _build_then_launch(self, environment: ModelEnvironment) -> None:
        from cogserve.envs.builder import EnvBuildError

        def progress(line: str) -> None:
            self._setup_logs.append(line)
            log.info("%s", line.rstrip())

        try:
            await environment.prepare(progress)
        except Exception as exc:  # noqa: BLE001 - any failure must end STARTING
            detail = str(exc) if isinstance(exc, EnvBuildError) else repr(exc)
            if not isinstance(exc, EnvBuildError):
                log.exception("building the model's environment failed")
            self.fatal_reason = f"could not build the model's environment: {detail}"
            self._setup_logs.append(f"cogserve: {self.fatal_reason}\n")
            for member in self.pool.members:
                member.state = WorkerState.SETUP_FAILED
            log.error("%s", self.fatal_reason)
            self._settle()
            return
        if not self.shutting_down:
            await self._launch()

    async def _launch(self) -> None:
        for member in self.pool.members:
            await self._start_member(member)

    async def _start_member(self, member: Member) -> None:
        if not self._setup_open and self.pool.state is not WorkerState.READY:
            self._open_setup()  # the server as a whole is (re)starting: a new setup document
        # its setup logs go to that document; a replacement's (others serve) to the log
        member.in_setup_document = self._setup_open
        member.restart = Restart.NONE
        member.draining = False
        if self._config_error is not None:  # --reload read a broken cog.yaml
            member.state = WorkerState.SETUP_FAILED
            if self._config_error not in self._setup_logs:
                self._setup_logs.append(self._config_error)
            self._settle()
            return
        member.state = WorkerState.STARTING
        clear_folder(member.tmpdir)
        # a train-only model (cog.yaml names only `train:`) runs its trainer as the model
        config = self.config
        train_only = not config.predict_ref and bool(config.train_ref)
        environment = self.settings.environment
        env = {"TMPDIR": member.tmpdir, **self.settings.extra_env, **self.pool.env_for(member)}
        if environment is not None:
            env.update(environment.worker_env())
        restart = member.process is not None
        member.process = WorkerProcess(
            WorkerSpec(ref=config.ref(Mode.TRAIN if train_only else Mode.PREDICT),
                       directory=str(config.directory),
                       mode=Mode.TRAIN if train_only else Mode.PREDICT,
                       train_ref=None if train_only else config.train_ref,
                       env=env,
                       schema_only=self.gate,
                       python=environment.python or sys.executable if environment
                       else sys.executable),
            lambda message: self._on_control(member, message), self._on_data,
            lambda code: self._on_exit(member, code),
        )
        await member.process.start()
        self.events.emit(RuntimeEvent.WORKER_STARTED, restart=restart)
        if self.settings.setup_timeout:
            loop = asyncio.get_running_loop()
            member.setup_timer = loop.call_later(self.settings.setup_timeout,
                                                 self._setup_timed_out, member)

    def _open_setup(self) -> None:
        self._setup_began = time.monotonic()
        self.setup = {"started_at": iso(now()), "completed_at": None,
                      "status": Status.STARTING, "logs": ""}
        self._setup_logs = []
        self._setup_open = True
        self.ready.clear()

    def go(self) -> None:
        """`cogserve predict`: the schema was read; let the worker run setup()."""
        for member in self.pool.members:
            if member.process is not None:
                member.process.send_control(protocol.go())

    def begin_shutdown(self) -> None:
        """Refuse new predictions from now on (those in flight finish: see `drain`)."""
        self.shutting_down = True

    def kill_workers(self) -> None:
        for member in self.pool.members:
            if member.process is not None:
                member.process.kill()

    async def stop(self) -> None:
        self.shutting_down = True
        if self._building is not None and not self._building.done():
            self._building.cancel()  # ends uv; the half-built environment is removed
            with contextlib.suppress(asyncio.CancelledError):
                await self._building
        await asyncio.gather(*(m.process.stop() for m in self.pool.members
                               if m.process is not None))
        shutil.rmtree(self.tmp_root, ignore_errors=True)

    async def drain(self) -> None:
        """Let in-flight (and queued) predictions finish, within bounds, then run the
        on_drain hooks.

        Predictions get `drain_timeout` seconds; those still running are then canceled,
        and those that outlive `cancel_timeout` too are failed and the workers are killed.
        So a shutdown takes at most drain_timeout + cancel_timeout (+ the webhook drain),
        which must fit in the orchestrator's grace period (Kubernetes:
        terminationGracePeriodSeconds, default 30 s, after which it sends SIGKILL).
        """
        if not await self._settled(self.settings.drain_timeout):
            running = list(self.predictions.values())
            log.warning("drain timeout (%gs, COGSERVE_DRAIN_TIMEOUT): canceling %d "
                        "predictions still running", self.settings.drain_timeout, len(running))
            for prediction in running:
                self.cancel(prediction.id)
            if not await self._settled(self.settings.cancel_timeout):
                for prediction in list(self.predictions.values()):
                    self._complete(prediction, Status.FAILED, "prediction failed: the server "
                                   "shut down before it finished (it ignored the cancel that "
                                   "followed the drain timeout)")
                self.kill_workers()
        for hook in self.on_drain:
            await hook()

    async def _settled(self, timeout: float) -> bool:
        """Wait until no prediction is in flight; False if `timeout` seconds pass first."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.predictions:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            await asyncio.wait([p.done for p in list(self.predictions.values())],
                               timeout=remaining)
        return True

    async def reload(self) -> None:
        """New code (--reload): restart every worker, each once its predictions finished."""
        self._config_error = None
        try:
            config = load_config(self.config.directory, self.settings.predictor)
            config.ref(Mode.PREDICT if config.predict_ref or not config.train_ref else Mode.TRAIN)
            self.config = config
        except DefinitionError as exc:  # shown in /health-check once the workers restart
            log.error("reload: %s", exc)
            self._config_error = f"cogserve: {exc}\n"
        for member in self.pool.members:
            member.restart = Restart.RELOAD
            member.draining = True
            process = member.process
            if process is None or process.exit_code is not None:
                await self._start_member(member)  # it had ended (a failed setup)
            elif member.state is not WorkerState.READY:
                process.kill()  # mid-setup or failed: its exit starts the new one
            elif member.idle:
                asyncio.get_running_loop().create_task(process.stop())
            # else: busy; its last prediction's completion stops it (_stop_drained)

    def _setup_timed_out(self, member: Member) -> None:
        member.setup_timer = None
        if member.state is WorkerState.STARTING:
            timeout = self.settings.setup_timeout
            self._setup_logs.append(f"setup() did not finish within {timeout:g} seconds "
                                    "(COG_SETUP_TIMEOUT)\n")
            member.state = WorkerState.SETUP_FAILED
            if member.process is not None:
                member.process.kill()
            self._settle()

    def _finish_setup(self, status: Status) -> None:
        self._setup_open = False
        self.setup["completed_at"] = iso(now())
        self.setup["status"] = status
        self.setup["logs"] = "".join(self._setup_logs)
        self.ready.set()
        self.events.emit(RuntimeEvent.SETUP_FINISHED, status=status,
                         seconds=time.monotonic() - self._setup_began)

    def _settle(self) -> None:
        """After a worker changed state: close the setup document once the server is no
        longer starting, and run or fail what waits in the queue."""
        state = self.pool.state
        if state is not WorkerState.STARTING:
            self._served = state is WorkerState.READY
        if self._setup_open and state is not WorkerState.STARTING:
            self._finish_setup(Status.SUCCEEDED if state is WorkerState.READY else Status.FAILED)
        if self.backlog is not None:
            if state in (WorkerState.SETUP_FAILED, WorkerState.DEFUNCT):
                reason = self.fatal_reason or "setup failed"
                for prediction in self.backlog.drain():
                    self._complete(prediction, Status.FAILED,
                                   f"prediction failed: the model cannot run ({reason})")
            else:
                self._run_queued()

    # ------------------------------------------------------------ worker messages

    def _on_control(self, member: Member, message: protocol.Message) -> None:
        kind = message.get(protocol.KIND)
        if kind == FromWorker.LOG:
            data = message["data"]
            if len(self.pool) > 1:
                data = f"[{member.label}] {data}"
            if member.state is WorkerState.STARTING and member.in_setup_document:
                self._setup_logs.append(data)  # joined when read: O(n), not O(n^2)
                if self.on_setup_log is not None:
                    self.on_setup_log(data)
            else:
                stream = sys.stderr if message.get("source") == "stderr" else sys.stdout
                stream.write(data)
                # a model's line is out when it is made: stdout is block-buffered when it is
                # a pipe or file (a container's log), unless PYTHONUNBUFFERED is set
                stream.flush()
        elif kind == FromWorker.SCHEMA:
            self.schema = message["schema"]
            components = self.schema["components"]["schemas"]
            self.validators = {}
            if "Input" in components:  # not for a train-only model
                self.validators[Mode.PREDICT] = InputValidator(self.schema)
            if "TrainingInput" in components:
                self.validators[Mode.TRAIN] = InputValidator(self.schema, "TrainingInput")
            self.versions = message["versions"]
            self.is_async = message["is_async"]
            self.streaming = message["streaming"]
            self.has_healthcheck = message["has_healthcheck"]
            member.slots = self._slot_count(message.get("concurrency"), member.index == 0)
            for callback in self.on_schema:
                callback()
        elif kind == FromWorker.READY:
            if member.state is WorkerState.STARTING:
                self._cancel_setup_timer(member)
                member.state = WorkerState.READY  # its slots are free from now
                if len(self.pool) > 1:
                    log.info("%s is ready (pid %s)", member.label,
                             member.process.pid if member.process else None)
                self._settle()
        elif kind == FromWorker.SETUP_FAILED:
            self._cancel_setup_timer(member)
            member.state = WorkerState.SETUP_FAILED
            self._settle()
        elif kind == FromWorker.FATAL:
            self._cancel_setup_timer(member)
            self.fatal_reason = message["reason"]
            self._setup_logs.append(message["reason"] + "\n")
            member.state = WorkerState.SETUP_FAILED
            log.error("%s", message["reason"])
            self._settle()
        elif kind == FromWorker.HEALTHCHECK_RESULT:
            waiter = self._health_waiters.pop(message["id"], None)
            if waiter is not None and not waiter.done():
                waiter.set_result(message)

    @staticmethod
    def _cancel_setup_timer(member: Member) -> None:
        if member.setup_timer is not None:
            member.setup_timer.cancel()
            member.setup_timer = None

    def _slot_count(self, declared: int | None, warn: bool) -> int:
        wanted = self.settings.concurrency or declared or 1
        if not self.is_async and wanted > 1:
            if warn:
                log.warning("run() is not async: serving one prediction at a time, not %d",
                            wanted)
            return 1
        return max(1, wanted)

    def _on_data(self, message: protocol.Message) -> None:
        prediction = self.predictions.get(message.get("id", ""))
        if prediction is None:
            # e.g. it failed already on an upload error
            handover.discard_folder(message, self._tmp_dirs)
            return
        if prediction.tail is None and not protocol.carries_files(message):
            self._apply(prediction, message)
            return
        previous = prediction.tail
        prediction.tail = asyncio.get_running_loop().create_task(
            self._apply_later(prediction, message, previous)
        )

    async def _apply_later(self, prediction: Prediction, message: protocol.Message,
                           previous: Awaitable[None] | None) -> None:
        if previous is not None:
            await previous
        try:
            if "output" in message and message["output"] is not None:
                # an iterator's file is named by its place in the stream: output.<n>.ext
                index = (len(prediction.current_output())
                         if message[protocol.KIND] == FromWorker.OUTPUT else None)
                message["output"] = await self.file_outputs.resolve(
                    message["output"], prediction, index)
        except Exception as exc:  # noqa: BLE001 - an upload failure fails the prediction
            if not prediction.terminal:
                self._cancel_on_worker(prediction)
                self._complete(prediction, Status.FAILED, f"file output: {exc}")
            handover.discard_folder(message, self._tmp_dirs)
            return
        self._apply(prediction, message)
        handover.discard_folder(message, self._tmp_dirs)

    def _apply(self, prediction: Prediction, message: protocol.Message) -> None:
        if prediction.terminal:
            return
        prediction.mark_processing()
        kind = message[protocol.KIND]
        if kind == FromWorker.LOG:
            prediction.append_log(message["source"], message["data"])
        elif kind == FromWorker.OUTPUT:
            prediction.append_output(message["output"])
        elif kind == FromWorker.METRIC:
            prediction.record_metric(message["name"], message["value"], message["mode"])
        else:  # a terminal frame: done | failed | cancelled
            if protocol.DOWNLOADS in message:  # file inputs the worker fetched
                nbytes, failures = message[protocol.DOWNLOADS]
                self.events.emit(RuntimeEvent.DOWNLOADS, bytes=nbytes, failures=failures)
            if kind == FromWorker.DONE:
                self._complete(prediction, Status.SUCCEEDED, output=message.get("output"),
                               predict_time=message.get("predict_time"))
            elif kind == FromWorker.FAILED:
                self._complete(prediction, Status.FAILED,
                               message.get("error") or "prediction failed")
            elif kind == FromWorker.CANCELLED:
                self._complete(prediction, Status.CANCELED)

    def _complete(self, prediction: Prediction, status: Status, error: str | None = None,
                  output: Any = None, predict_time: float | None = None) -> None:
        """Give the slot back first (to the queue's oldest, if one waits), then settle
        the prediction (which wakes its waiters)."""
        ended_before = prediction.terminal  # then it is not announced a second time
        if self.predictions.pop(prediction.id, None) is not None:
            slot = prediction.slot
            if slot is not None:
                slot.release()
                member = slot.member
                if member.draining and member.idle:
                    self._stop_drained(member)
                if self.backlog is not None:
                    self._run_queued()
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
            self.events.emit(RuntimeEvent.PREDICTION_COMPLETED, prediction=prediction)

    def _stop_drained(self, member: Member) -> None:
        """A reloading worker finished its last prediction: stop it; its exit restarts it."""
        if member.process is not None and member.restart is Restart.RELOAD:
            asyncio.get_running_loop().create_task(member.process.stop())

    def _on_exit(self, member: Member, code: int | None) -> None:
        how = describe_exit(code)
        self._cancel_setup_timer(member)
        mine = [p for p in self.predictions.values()
                if p.slot is not None and p.slot.member is member]
        # a crash is an exit nobody asked for: not a shutdown, a restart (an ignored
        # cancel, a reload), a setup timeout, or a worker ending after a fatal load error
        self.events.emit(RuntimeEvent.WORKER_EXITED, expected=self.shutting_down
                         or member.restart is not Restart.NONE
                         or member.state is WorkerState.SETUP_FAILED)
        if self.shutting_down:
            # a worker that dies while the server drains (or a second Ctrl-C) cannot finish
            # what it was running: without this, drain() waited for them forever
            member.state = WorkerState.DEFUNCT
            for prediction in mine:
                self._complete(prediction, Status.FAILED,
                               f"prediction failed: the worker process {how} during shutdown")
            if self.backlog is not None and self.pool.state is not WorkerState.READY:
                for prediction in self.backlog.drain():
                    self._complete(prediction, Status.FAILED,
                                   "prediction failed: the server shut down before it ran")
            return
        restart = member.restart
        if restart is Restart.CANCEL_IGNORED:
            reason = f"the worker was stopped after a cancel was ignored ({how})"
        elif restart is Restart.RELOAD:
            reason = f"the worker was restarted to reload the model ({how})"
        else:
            reason = f"the worker process {how}"
        was = member.state
        member.state = WorkerState.DEFUNCT  # no slot free until it is ready again
        for prediction in mine:
            if prediction.cancel_requested:
                prediction.append_log("stderr", f"cogserve: {reason}\n")
                self._complete(prediction, Status.CANCELED)
            else:
                self._complete(prediction, Status.FAILED, f"prediction failed: {reason}")
        loop = asyncio.get_running_loop()
        if restart is not Restart.NONE:
            member.state = WorkerState.STARTING
            loop.create_task(self._start_member(member))
            return
        if was is WorkerState.STARTING:
            if not self.fatal_reason:
                self._setup_logs.append(f"cogserve: {reason} during setup\n")
            member.state = WorkerState.SETUP_FAILED
        elif was is WorkerState.SETUP_FAILED:
            member.state = WorkerState.SETUP_FAILED
        elif was is WorkerState.READY:
            if len(self.pool) > 1:
                log.error("%s (pid %s): %s; starting a new one", member.label,
                          member.process.pid if member.process else None, reason)
                member.state = WorkerState.STARTING
                loop.create_task(self._start_member(member))
                return
            self.fatal_reason = reason
            log.error("%s; the server stays up but cannot run predictions", reason)
        self._settle()

    # ------------------------------------------------------------ predictions

    @property
    def model_name(self) -> str:
        """The model's name under /v2: --model-name, else the last part of cog.yaml's
        `image` (no tag), else the folder."""
        return self.settings.model_name or self.config.default_name()

    @property
    def health(self) -> Health:
        status = self.status
        if status is Health.READY and self.pool.free <= 0 and (
                self.backlog is None or self.backlog.full):
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
        return self._served and self.status is Health.STARTING

    def check_accepting(self) -> None:
        """Raise NotReady unless a prediction could be created now (slots aside)."""
        if self.shutting_down:
            raise NotReady("The server is shutting down", None)
        status = self.status
        if status is not Health.READY and not self.restarting:
            detail = {
                Health.STARTING: "Setup has not finished yet. Wait until it has finished, or "
                                 "GET /health-check for status.",
                Health.SETUP_FAILED: "Setup failed: the model cannot run predictions. GET "
                                     "/health-check for its logs.",
                Health.DEFUNCT: f"The model is defunct ({self.fatal_reason}); restart the "
                                "server.",
            }.get(status, f"The model is not ready ({status})")
            raise NotReady(detail, status)

    def validate(self, raw_input: Any, mode: Mode = Mode.PREDICT) -> list[FieldError]:
        return self.validators[mode].validate(raw_input)

    def check_capacity(self) -> None:
        """Raise what create() would for want of a slot (AtCapacity) or of a place in the
        queue (QueueFull). The HTTP front end asks before it reads a large body, so six
        95 MB bodies bound for 409 are not read into memory first."""
        if self.pool.pick() is not None:
            return
        backlog = self.backlog
        if backlog is None:
            raise AtCapacity()
        if backlog.full:
            raise QueueFull(backlog.capacity, backlog.retry_after(
                max(1, sum(m.slots for m in self.pool.members)), self._mean_run))

    def create(
        self,
        prediction_id: str,
        raw_input: dict[str, Any],
        *,
        mode: Mode = Mode.PREDICT,
        webhook: str | None = None,
        webhook_events_filter: frozenset[WebhookEvent] | None = None,
        output_file_prefix: str | None = None,
        context: dict[str, str] | None = None,
        listeners: list[Listener] | None = None,
        remember: bool = False,
        model_context: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> Prediction:
        """Send a validated input to a free worker slot, or queue it (or raise a Refusal:
        AtCapacity with no free slot and no queue, QueueFull when the queue is full).

        `remember`: keep the finished prediction in `recent` (Cog's routes, which can be
        asked for it again; not V2 or the CLI, whose ids nobody can ask for).
        `timeout` is the request's own deadline in seconds; `--predict-timeout` caps it.
        """
        self.check_accepting()
        if prediction_id in self.predictions:
            raise AlreadyRunning(prediction_id)
        member = self.pool.pick()
        backlog = self.backlog
        if member is None:
            self.check_capacity()
        schema = self.schema or {}
        output = schema.get("components", {}).get("schemas", {}).get(
            "TrainingOutput" if mode is Mode.TRAIN else "Output", {})
        prediction = Prediction(
            prediction_id,
            self.validators[mode].redact(raw_input),
            kind="training" if mode is Mode.TRAIN else "prediction",
            iterator=output.get("x-cog-array-type") == "iterator",
            webhook=webhook,
            webhook_events_filter=webhook_events_filter,
            output_file_prefix=output_file_prefix,
            context=context,
        )
        limit = self.settings.predict_timeout
        prediction.timeout = min(timeout, limit) if timeout and limit else (timeout or limit)
        for listener in listeners or ():
            prediction.subscribe(listener)
        if self.streaming:  # SSE replay; other models pay nothing
            prediction.subscribe(EventHistory(self.settings.stream_history,
                                             self.settings.stream_history_bytes))
        if remember:  # last: on `completed` the SSE history above is already complete
            prediction.subscribe(self.recent.listener)
        message = protocol.predict(prediction_id, raw_input, mode, model_context)
        self.events.emit(RuntimeEvent.PREDICTION_CREATED, prediction=prediction, message=message)
        if member is None:
            assert backlog is not None
            try:  # refused now (422) rather than failing once it leaves the queue
                orjson.dumps(raw_input)
            except TypeError as exc:
                self.events.emit(RuntimeEvent.PREDICTION_REFUSED, prediction=prediction)
                raise _unencodable(exc) from None
            self.predictions[prediction_id] = prediction
            backlog.push(prediction, message)
            return prediction
        self.predictions[prediction_id] = prediction
        try:
            self._send(member, prediction, message)
        except TypeError as exc:  # orjson: nested too deeply, an int beyond 64 bits
            # nothing reached the worker: give the slot back, or it is lost for good
            self.predictions.pop(prediction_id, None)
            self._unsend(prediction)
            self.events.emit(RuntimeEvent.PREDICTION_REFUSED, prediction=prediction)
            raise _unencodable(exc) from None
        return prediction

    def _send(self, member: Member, prediction: Prediction, message: protocol.Message) -> None:
        """Take a slot of `member` and hand it the prediction; the deadline starts now."""
        prediction.slot = member.acquire()
        assert member.process is not None
        handover.spill_input(message, member.tmpdir)
        member.process.send_data(message)
        if prediction.timeout:
            prediction.deadline = asyncio.get_running_loop().call_later(
                prediction.timeout, self._deadline_passed, prediction)
        prediction.mark_started()

    @staticmethod
    def _unsend(prediction: Prediction) -> None:
        """Nothing reached the worker: give the slot back, or it is lost for good."""
        if prediction.slot is not None:
            prediction.slot.release()
            prediction.slot = None

    def _run_queued(self) -> None:
        """Hand waiting predictions to free slots, oldest first."""
        backlog = self.backlog
        assert backlog is not None
        while len(backlog) and (member := self.pool.pick()) is not None:
            entry = backlog.pop()
            assert entry is not None
            prediction, message = entry
            try:
                self._send(member, prediction, message)
            except (TypeError, OSError) as exc:
                self._unsend(prediction)
                self._complete(prediction, Status.FAILED, f"prediction failed: {exc}")

    def _queue_timed_out(self, prediction: Prediction) -> None:
        if self.backlog is not None and self.backlog.remove(prediction.id) is not None:
            self._complete(prediction, Status.FAILED,
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

    def cancel(self, prediction_id: str) -> None:
        """Cancel a queued or running prediction (or raise UnknownPrediction)."""
        prediction = self.predictions.get(prediction_id)
        if prediction is None:
            raise UnknownPrediction(prediction_id)
        if prediction.slot is None:  # still queued: it never reaches the model
            self._complete(prediction, Status.CANCELED)
            return
        if prediction.request_cancel():
            self._cancel_on_worker(prediction)
            loop = asyncio.get_running_loop()
            loop.call_later(self.settings.cancel_timeout, self._cancel_overdue, prediction)

    def _cancel_on_worker(self, prediction: Prediction) -> None:
        member = prediction.slot.member if prediction.slot is not None else None
        if member is not None and member.process is not None:
            try:
                member.process.send_control(protocol.cancel(prediction.id))
            except (ConnectionError, RuntimeError):
                pass

    def _cancel_overdue(self, prediction: Prediction) -> None:
        """run() ignored the cancel: end its worker so the slot is not held forever."""
        member = prediction.slot.member if prediction.slot is not None else None
        if prediction.terminal or member is None or member.process is None \
                or self.shutting_down:
            return
        log.warning("prediction %s ignored its cancel for %.1fs; restarting %s",
                    prediction.id, self.settings.cancel_timeout,
                    member.label if len(self.pool) > 1 else "the worker")
        member.restart = Restart.CANCEL_IGNORED
        member.state = WorkerState.STARTING
        member.process.kill()

    # ------------------------------------------------------------ health

    async def health_document(self) -> dict[str, Any]:
        status = self.health
        body: dict[str, Any] = {"status": status}
        if status in SERVING and self.has_healthcheck:
            error = await self._user_healthcheck()
            if error is not None:
                body["status"] = Health.UNHEALTHY
                body["user_healthcheck_error"] = error
        body["setup"] = {**self.setup, "logs": "".join(self._setup_logs)}
        # coglet's keys for what it can know (python_sdk, python: the model's, once its
        # worker has said); cogserve's own version under its name, where coglet's would be
        body["version"] = {"cogserve": cogserve.__version__, **self.versions}
        if self.backlog is not None:
            body["queue"] = {"length": len(self.backlog), "size": self.backlog.capacity}
        if len(self.pool) > 1:
            body["workers"] = self.pool.describe()
        return body

    async def _user_healthcheck(self) -> str | None:
        member = next((m for m in self.pool.members if m.state is WorkerState.READY), None)
        if member is None or member.process is None:
            return None
        self._health_seq += 1
        hid = self._health_seq
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._health_waiters[hid] = waiter
        member.process.send_control(protocol.healthcheck(hid))
        timeout = self.settings.healthcheck_timeout
        try:
            result = await asyncio.wait_for(waiter, timeout)
        except TimeoutError:
            self._health_waiters.pop(hid, None)
            return ("Healthcheck failed: user-defined healthcheck timed out after "
                    f"{timeout:.1f} seconds")
        if result.get("status") != UserHealth.HEALTHY:
            return result.get("error") or "user healthcheck failed"
        return None


_HEALTH_OF = {state: Health(state.value) for state in WorkerState}


def _non_negative(value: float | None, default: float) -> float:
    return default if value is None or value < 0 else value
def _unencodable(exc: TypeError) -> InputNotSendable:
    return InputNotSendable(f"the input cannot be passed to the model: {exc} (JSON nested "
                            "deeper than about 250 levels is refused)")


def parse_gpus(raw: str) -> list[str]:
    """`0,1` -> ["0", "1"]: the CUDA_VISIBLE_DEVICES of worker 0, 1, 0, 1, ..."""
    return [part.strip() for part in raw.split(",") if part.strip()]


def clear_folder(folder: str) -> None:
    """Remove everything inside `folder` (what a previous worker left), keeping it."""
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        os.makedirs(folder, exist_ok=True)
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.unlink(entry.path)
            except OSError:
                pass


def generate_id(prefix: str = "") -> str:
    """26 lowercase base32 characters; `prefix` replaces the first ones (a Ray Serve
    replica's tag, so that requests naming the id find the replica that holds it)."""
    import base64
    import uuid

    ident = base64.b32encode(uuid.uuid4().bytes).decode().lower().rstrip("=")
    return prefix + ident[len(prefix):]


def parse_created_at(value: Any) -> datetime.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
