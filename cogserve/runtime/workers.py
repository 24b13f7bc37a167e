"""The worker processes of one server: built, started, watched, restarted, stopped.

`Workers` owns the pool (`runtime/pool.py`), the model's environment build, each
worker's folder, the setup report and timer, the control channel (schema, setup logs,
ready, healthcheck) and what an exit means. It builds workers with an injectable
`Spawner` (`WorkerProcess` by default; the runtime's unit tests pass fakes) and knows
nothing of predictions: what concerns them goes to its `WorkerListener`, as coglet's
orchestrator reports to its service. The predictions side reaches the workers only
through `slots.WorkerSlots`, by slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from cogserve.exceptions import DefinitionError
from cogserve.model.config import ModelConfig, load_config
from cogserve.runtime.events import EventBus, RuntimeEvent
from cogserve.runtime.folders import ServerFolders
from cogserve.runtime.pool import Member, Pool, Restart, WorkerState
from cogserve.runtime.settings import Settings
from cogserve.runtime.setup_report import SetupReport
from cogserve.runtime.supervisor import Spawner, WorkerProcess, WorkerSpec, describe_exit
from cogserve.runtime.user_healthcheck import UserHealthcheck
from cogserve.sdk.runner import BatchLimits
from cogserve.wire import protocol
from cogserve.wire.protocol import FromWorker, Mode
from cogserve.wire.states import Status

if TYPE_CHECKING:
    from collections.abc import Callable

    from cogserve.envs.model_env import ModelEnvironment

log = logging.getLogger("cogserve")


@dataclass(frozen=True)
class ModelInfo:
    """What the worker reported with its schema."""

    schema: dict[str, Any]
    # what runs the model: `python_sdk` (the `cog` version the model imports), `python`
    versions: dict[str, str]
    is_async: bool
    streaming: bool
    has_healthcheck: bool
    descriptions: dict[str, str]  # the entry points' docstrings, by Mode (MCP tools)
    batch: BatchLimits | None = None  # a `@batch` run()'s limits


class WorkerListener(Protocol):
    """What the workers tell their owner (the `Service`)."""

    def on_schema(self, model: ModelInfo) -> None:
        """A worker reported the model's schema (every start)."""

    def on_settled(self, state: WorkerState) -> None:
        """A worker changed state; `state` is the pool's now (queued work may go, or fail)."""

    def on_lost(self, member: Member, reason: str, during_shutdown: bool) -> None:
        """`member`'s process ended; what ran on it cannot finish (`reason` says why)."""

    def on_data(self, message: protocol.Message) -> None:
        """A frame of the data channel (a prediction's event)."""


class Workers:
    def __init__(self, config: ModelConfig, settings: Settings, listener: WorkerListener,
                 events: EventBus, *, spawner: Spawner = WorkerProcess, gate: bool = False,
                 on_setup_log: Callable[[str], None] | None = None) -> None:
        self.config = config
        self.settings = settings
        self._listener = listener
        self._events = events
        self._spawner = spawner
        # `cogserve predict`: the worker stops after its schema and waits for `go()`
        self._gate = gate
        self._on_setup_log = on_setup_log
        self.pool = Pool(settings.workers, settings.gpus)
        self.setup = SetupReport()
        self.model: ModelInfo | None = None
        self.fatal_reason: str | None = None
        self.ready = asyncio.Event()  # set once setup has finished, either way
        self.shutting_down = False
        # the pool was READY when it last settled: a STARTING now is a worker on its way
        # back (an ignored cancel, a crash in a pool, a reload), not a first start
        self.served = False
        self._config_error: str | None = None  # cog.yaml --reload could not read
        self._building: asyncio.Task[None] | None = None  # the model's environment
        self._healthcheck = UserHealthcheck(settings.healthcheck_timeout)
        self.folders = ServerFolders(self.pool.members, settings.memory_dir)
        self.tmp_root = self.folders.root

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        self._open_setup()
        environment = self.settings.environment
        if environment is not None and environment.find_ready() is None:
            # a build takes minutes: meanwhile health answers STARTING, uv's output goes
            # to the setup logs, and the workers start once the environment is ready
            self._building = asyncio.get_running_loop().create_task(
                self._build_then_launch(environment))
            return
        for member in self.pool.members:
            await self._start_member(member)

    async def _build_then_launch(self, environment: ModelEnvironment) -> None:
        from cogserve.envs.builder import EnvBuildError

        def progress(line: str) -> None:
            self.setup.append(line)
            log.info("%s", line.rstrip())

        try:
            await environment.prepare(progress)
        except Exception as exc:  # noqa: BLE001 - any failure must end STARTING
            detail = str(exc) if isinstance(exc, EnvBuildError) else repr(exc)
            if not isinstance(exc, EnvBuildError):
                log.exception("building the model's environment failed")
            self.fatal_reason = f"could not build the model's environment: {detail}"
            self.setup.append(f"cogserve: {self.fatal_reason}\n")
            for member in self.pool.members:
                member.state = WorkerState.SETUP_FAILED
            log.error("%s", self.fatal_reason)
            self._settle()
            return
        if not self.shutting_down:
            for member in self.pool.members:
                await self._start_member(member)

    async def _start_member(self, member: Member) -> None:
        if not self.setup.is_open and self.pool.state is not WorkerState.READY:
            self._open_setup()  # the server as a whole is (re)starting: a new report
        # its setup logs go to that report; a replacement's (others serve) to the log
        member.in_setup_document = self.setup.is_open
        member.restart = Restart.NONE
        member.draining = False
        if self._config_error is not None:  # --reload read a broken cog.yaml
            member.state = WorkerState.SETUP_FAILED
            if self._config_error not in self.setup.lines:
                self.setup.append(self._config_error)
            self._settle()
            return
        member.state = WorkerState.STARTING
        self.folders.clear(member)
        # a train-only model (cog.yaml names only `train:`) runs its trainer as the model
        config = self.config
        train_only = not config.predict_ref and bool(config.train_ref)
        environment = self.settings.environment
        env = {**self.folders.worker_env(member), **self.settings.extra_env,
               **self.pool.env_for(member)}
        if environment is not None:
            env.update(environment.worker_env())
        restart = member.process is not None
        member.process = self._spawner(
            WorkerSpec(ref=config.ref(Mode.TRAIN if train_only else Mode.PREDICT),
                       directory=str(config.directory),
                       mode=Mode.TRAIN if train_only else Mode.PREDICT,
                       train_ref=None if train_only else config.train_ref,
                       env=env,
                       schema_only=self._gate,
                       python=environment.python or sys.executable if environment
                       else sys.executable),
            lambda message: self._on_control(member, message), self._listener.on_data,
            lambda code: self._on_exit(member, code),
        )
        await member.process.start()
        self._events.emit(RuntimeEvent.WORKER_STARTED, restart=restart, worker=member.index,
                          pid=member.process.pid)
        if self.settings.setup_timeout:
            loop = asyncio.get_running_loop()
            member.setup_timer = loop.call_later(self.settings.setup_timeout,
                                                 self._setup_timed_out, member)

    def _open_setup(self) -> None:
        self.setup.open()
        self.ready.clear()

    def go(self) -> None:
        """`cogserve predict`: the schema was read; let the worker run setup()."""
        for member in self.pool.members:
            if member.process is not None:
                member.process.send_control(protocol.go())

    def kill(self) -> None:
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
        self.folders.remove()

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
            # else: busy; its last prediction's release stops it (`released`)

    def _setup_timed_out(self, member: Member) -> None:
        member.setup_timer = None
        if member.state is WorkerState.STARTING:
            timeout = self.settings.setup_timeout
            self.setup.append(f"setup() did not finish within {timeout:g} seconds "
                              "(COG_SETUP_TIMEOUT)\n")
            member.state = WorkerState.SETUP_FAILED
            if member.process is not None:
                member.process.kill()
            self._settle()

    def _settle(self) -> None:
        """After a worker changed state: close the setup report once the server is no
        longer starting, then tell the listener."""
        state = self.pool.state
        if state is not WorkerState.STARTING:
            self.served = state is WorkerState.READY
        if self.setup.is_open and state is not WorkerState.STARTING:
            status = Status.SUCCEEDED if state is WorkerState.READY else Status.FAILED
            seconds = self.setup.finish(status)
            self.ready.set()
            self._events.emit(RuntimeEvent.SETUP_FINISHED, status=status, seconds=seconds)
        self._listener.on_settled(state)

    # ------------------------------------------------------------ control frames

    def _on_control(self, member: Member, message: protocol.Message) -> None:
        kind = message.get(protocol.KIND)
        if kind == FromWorker.LOG:
            data = message["data"]
            if len(self.pool) > 1:
                data = f"[{member.label}] {data}"
            if member.state is WorkerState.STARTING and member.in_setup_document:
                self.setup.append(data)
                if self._on_setup_log is not None:
                    self._on_setup_log(data)
            else:
                stream = sys.stderr if message.get("source") == "stderr" else sys.stdout
                stream.write(data)
                # a model's line is out when it is made: stdout is block-buffered when it is
                # a pipe or file (a container's log), unless PYTHONUNBUFFERED is set
                stream.flush()
        elif kind == FromWorker.SCHEMA:
            batch = message.get("batch")
            self.model = ModelInfo(message["schema"], message["versions"],
                                   message["is_async"], message["streaming"],
                                   message["has_healthcheck"], message["descriptions"],
                                   BatchLimits(batch["max_size"], batch["max_wait"])
                                   if batch else None)
            member.slots = slot_count(self.settings.concurrency or message.get("concurrency"),
                                      self.model.is_async, warn=member.index == 0)
            self._listener.on_schema(self.model)
        elif kind == FromWorker.READY:
            if member.state is WorkerState.STARTING:
                _cancel_setup_timer(member)
                member.state = WorkerState.READY  # its slots are free from now
                # the GPU it was given (--gpus), so an operator sees which worker is where
                gpu = self.pool.env_for(member).get("CUDA_VISIBLE_DEVICES")
                if len(self.pool) > 1 or gpu is not None:
                    log.info("%s is ready (pid %s%s)", member.label,
                             member.process.pid if member.process else None,
                             "" if gpu is None else f", CUDA_VISIBLE_DEVICES={gpu}")
                self._settle()
        elif kind == FromWorker.SETUP_FAILED:
            _cancel_setup_timer(member)
            member.state = WorkerState.SETUP_FAILED
            self._settle()
        elif kind == FromWorker.FATAL:
            _cancel_setup_timer(member)
            self.fatal_reason = message["reason"]
            self.setup.append(message["reason"] + "\n")
            member.state = WorkerState.SETUP_FAILED
            log.error("%s", message["reason"])
            self._settle()
        elif kind == FromWorker.HEALTHCHECK_RESULT:
            self._healthcheck.answered(message)

    async def user_healthcheck(self) -> str | None:
        """Run the model's healthcheck() on a ready worker: None, or what failed."""
        member = next((m for m in self.pool.members if m.state is WorkerState.READY), None)
        if member is None or member.process is None:
            return None
        return await self._healthcheck.ask(member.process)

    # ------------------------------------------------------------ exits

    def _on_exit(self, member: Member, code: int | None) -> None:
        how = describe_exit(code)
        _cancel_setup_timer(member)
        # a crash is an exit nobody asked for: not a shutdown, a restart (an ignored
        # cancel, a reload), a setup timeout, or a worker ending after a fatal load error
        self._events.emit(RuntimeEvent.WORKER_EXITED, worker=member.index,
                          expected=self.shutting_down
                          or member.restart is not Restart.NONE
                          or member.state is WorkerState.SETUP_FAILED)
        if self.shutting_down:
            # a worker that dies while the server drains (or a second Ctrl-C) cannot
            # finish what it was running: without this, the drain waited for it forever
            member.state = WorkerState.DEFUNCT
            self._listener.on_lost(member, f"the worker process {how} during shutdown", True)
            return
        restart = member.restart
        reason = _exit_reason(restart, how)
        was = member.state
        member.state = WorkerState.DEFUNCT  # no slot free until it is ready again
        self._listener.on_lost(member, reason, False)
        loop = asyncio.get_running_loop()
        if restart is not Restart.NONE:
            member.state = WorkerState.STARTING
            loop.create_task(self._start_member(member))
            return
        if was is WorkerState.STARTING:
            if not self.fatal_reason:
                self.setup.append(f"cogserve: {reason} during setup\n")
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


def slot_count(wanted: int | None, is_async: bool, *, warn: bool) -> int:
    """A worker's slots: the concurrency asked for (flag, else the model's), one for a
    sync run()."""
    wanted = wanted or 1
    if not is_async and wanted > 1:
        if warn:
            log.warning("run() is not async: serving one prediction at a time, not %d", wanted)
        return 1
    return max(1, wanted)


def _exit_reason(restart: Restart, how: str) -> str:
    if restart is Restart.CANCEL_IGNORED:
        return f"the worker was stopped after a cancel was ignored ({how})"
    if restart is Restart.RELOAD:
        return f"the worker was restarted to reload the model ({how})"
    return f"the worker process {how}"


def _cancel_setup_timer(member: Member) -> None:
    if member.setup_timer is not None:
        member.setup_timer.cancel()
        member.setup_timer = None
