"""The parent's single owner of runtime state: health, slots, predictions, the worker.

HTTP front ends (Cog's routes, V2) call `create`, `cancel` and `health`; the worker's
messages arrive through `_on_control` / `_on_data`. A slot is taken before a
prediction is sent to the worker and given back as soon as its terminal message
arrives, before any response is written, so a sequential client never sees 409.
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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

import cogserve
from cogserve import protocol
from cogserve.config import ModelConfig, env_float, env_int
from cogserve.protocol import FromWorker, Mode, UserHealth
from cogserve.runtime.history import DEFAULT_CAPACITY, EventHistory, capacity_from
from cogserve.runtime.outputs import resolve_files
from cogserve.runtime.prediction import Prediction, iso, now
from cogserve.runtime.store import (
    BYTES_VARIABLE,
    COUNT_VARIABLE,
    DEFAULT_BYTES,
    DEFAULT_COUNT,
    FinishedStore,
)
from cogserve.runtime.supervisor import WorkerProcess, WorkerSpec, describe_exit
from cogserve.validation import InputValidator

if TYPE_CHECKING:
    from cogserve.envs.model_env import ModelEnvironment

log = logging.getLogger("cogserve")


class ServiceError(Exception):
    """A request the runtime refuses, with the HTTP status and JSON body to send."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(body)
        self.status = status
        self.body = body


@dataclass
class Settings:
    """Runtime knobs, from flags and the environment variables of the runtime spec."""

    concurrency: int | None = None
    setup_timeout: float | None = None
    cancel_timeout: float = 5.0
    drain_timeout: float = 10.0  # seconds in-flight predictions get at shutdown
    healthcheck_timeout: float = 5.0
    upload_url: str | None = None
    model_name: str | None = None
    model_version: str | None = None
    stream_history: int = DEFAULT_CAPACITY  # SSE replay buffer, in events
    recent_count: int = DEFAULT_COUNT  # finished predictions kept for GET / PUT retries
    recent_bytes: int = DEFAULT_BYTES
    playground: bool = True  # the browser page at /docs (--no-playground)
    extra_env: dict[str, str] = field(default_factory=dict)
    environment: ModelEnvironment | None = None  # the model's own packages (cogserve/envs)

    @classmethod
    def from_env(cls, config: ModelConfig, upload_url: str | None = None) -> Settings:
        env = {**config.environment, **{k: v for k, v in os.environ.items() if k.startswith("COG")}}
        setup_timeout = env_float("COG_SETUP_TIMEOUT", None)
        return cls(
            concurrency=env_int("COG_MAX_CONCURRENCY", None) or config.concurrency,
            setup_timeout=setup_timeout if setup_timeout else None,
            cancel_timeout=env_float("COGSERVE_CANCEL_TIMEOUT", 5.0) or 5.0,
            drain_timeout=_non_negative(env_float("COGSERVE_DRAIN_TIMEOUT", 10.0), 10.0),
            healthcheck_timeout=env_float("COGSERVE_HEALTHCHECK_TIMEOUT", 5.0) or 5.0,
            upload_url=upload_url,
            stream_history=capacity_from(env.get("COG_STREAM_HISTORY_CAPACITY")),
            recent_count=env_int(COUNT_VARIABLE, DEFAULT_COUNT) or 0,
            recent_bytes=env_int(BYTES_VARIABLE, DEFAULT_BYTES) or 0,
            extra_env=config.environment,
        )


class Service:
    def __init__(self, config: ModelConfig, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.status = "STARTING"
        self.setup: dict[str, Any] = {"started_at": None, "completed_at": None,
                                      "status": "starting", "logs": ""}
        self._setup_logs: list[str] = []
        self.schema: dict[str, Any] | None = None
        self.validators: dict[str, InputValidator] = {}
        self.is_async = False
        self.streaming = False
        self.has_healthcheck = False
        self.slots = 1
        self.free = 0
        self.predictions: dict[str, Prediction] = {}  # running
        self.recent = FinishedStore(settings.recent_count, settings.recent_bytes)
        self.fatal_reason: str | None = None
        self.worker: WorkerProcess | None = None
        self.ready = asyncio.Event()  # set once setup has finished, either way
        self.shutting_down = False
        self._health_waiters: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._health_seq = 0
        self._setup_timer: asyncio.TimerHandle | None = None
        self._restarting = False
        # One folder for all of this server's temporary files: the worker's TMPDIR (so
        # its prediction folders and the model's tempfiles land here) and input spill
        # files. Emptied when the worker (re)starts, removed when the server stops.
        self.tmp_root = tempfile.mkdtemp(prefix=protocol.SERVER_DIR_PREFIX)
        self.on_schema: list[Callable[[], None]] = []
        # awaited after the last prediction drained (e.g. queued webhooks get to finish)
        self.on_drain: list[Callable[[], Awaitable[None]]] = []
        self.on_setup_log: Callable[[str], None] | None = None  # `cogserve predict` prints them
        self.gate = False  # `cogserve predict`: the worker waits for "go" before setup()
        self._building: asyncio.Task[None] | None = None  # the model's environment

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        self.status = "STARTING"
        self.setup = {"started_at": iso(now()), "completed_at": None, "status": "starting",
                      "logs": ""}
        self._setup_logs = []
        self.ready.clear()
        clear_folder(self.tmp_root)
        environment = self.settings.environment
        if environment is not None and environment.find_ready() is None:
            # a build takes minutes: meanwhile health answers STARTING, uv's output goes
            # to setup.logs, and the worker starts once the environment is ready
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
            self.status = "SETUP_FAILED"
            self._finish_setup("failed")
            log.error("%s", self.fatal_reason)
            return
        if not self.shutting_down:
            await self._launch()

    async def _launch(self) -> None:
        # a train-only model (cog.yaml names only `train:`) runs its trainer as the model
        train_only = not self.config.predict_ref and bool(self.config.train_ref)
        environment = self.settings.environment
        env = {"TMPDIR": self.tmp_root, **self.settings.extra_env}
        if environment is not None:
            env.update(environment.worker_env())
        self.worker = WorkerProcess(
            WorkerSpec(ref=self.config.ref("train" if train_only else "predict"),
                       directory=str(self.config.directory),
                       mode=Mode.TRAIN if train_only else Mode.PREDICT,
                       train_ref=None if train_only else self.config.train_ref,
                       env=env,
                       schema_only=self.gate,
                       python=environment.python if environment else sys.executable),
            self._on_control, self._on_data, self._on_exit,
        )
        await self.worker.start()
        if self.settings.setup_timeout:
            loop = asyncio.get_running_loop()
            self._setup_timer = loop.call_later(self.settings.setup_timeout, self._setup_timed_out)

    async def stop(self) -> None:
        self.shutting_down = True
        if self._building is not None and not self._building.done():
            self._building.cancel()  # ends uv; the half-built environment is removed
            with contextlib.suppress(asyncio.CancelledError):
                await self._building
        if self.worker is not None:
            await self.worker.stop()
        shutil.rmtree(self.tmp_root, ignore_errors=True)

    async def drain(self) -> None:
        """Let in-flight predictions finish, within bounds, then run the on_drain hooks.

        Predictions get `drain_timeout` seconds; those still running are then canceled,
        and those that outlive `cancel_timeout` too are failed and the worker is killed.
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
                    self._complete(prediction, "failed", "prediction failed: the server shut "
                                   "down before it finished (it ignored the cancel that "
                                   "followed the drain timeout)")
                if self.worker is not None:
                    self.worker.kill()
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

    def _setup_timed_out(self) -> None:
        if self.status == "STARTING":
            timeout = self.settings.setup_timeout
            self._finish_setup("failed", f"setup() did not finish within {timeout:g} seconds "
                               "(COG_SETUP_TIMEOUT)\n")
            self.status = "SETUP_FAILED"
            if self.worker is not None:
                self.worker.kill()

    def _finish_setup(self, status: str, extra_log: str = "") -> None:
        if self._setup_timer is not None:
            self._setup_timer.cancel()
            self._setup_timer = None
        if extra_log:
            self._setup_logs.append(extra_log)
        self.setup["completed_at"] = iso(now())
        self.setup["status"] = status
        self.setup["logs"] = "".join(self._setup_logs)
        self.ready.set()

    # ------------------------------------------------------------ worker messages

    def _on_control(self, message: protocol.Message) -> None:
        kind = message.get(protocol.KIND)
        if kind == FromWorker.LOG:
            if self.status == "STARTING":
                self._setup_logs.append(message["data"])  # joined when read: O(n), not O(n^2)
                if self.on_setup_log is not None:
                    self.on_setup_log(message["data"])
            else:
                stream = sys.stderr if message.get("source") == "stderr" else sys.stdout
                stream.write(message["data"])
        elif kind == FromWorker.SCHEMA:
            self.schema = message["schema"]
            components = self.schema["components"]["schemas"]
            self.validators = {}
            if "Input" in components:  # not for a train-only model
                self.validators["predict"] = InputValidator(self.schema)
            if "TrainingInput" in components:
                self.validators["train"] = InputValidator(self.schema, "TrainingInput")
            self.is_async = message["is_async"]
            self.streaming = message["streaming"]
            self.has_healthcheck = message["has_healthcheck"]
            self.slots = self._slot_count(message.get("concurrency"))
            for callback in self.on_schema:
                callback()
        elif kind == FromWorker.READY:
            if self.status == "STARTING":
                self.free = self.slots
                self.status = "READY"
                self._finish_setup("succeeded")
        elif kind == FromWorker.SETUP_FAILED:
            self.status = "SETUP_FAILED"
            self._finish_setup("failed")
        elif kind == FromWorker.FATAL:
            self.fatal_reason = message["reason"]
            self._setup_logs.append(message["reason"] + "\n")
            self.status = "SETUP_FAILED"
            self._finish_setup("failed")
            log.error("%s", message["reason"])
        elif kind == FromWorker.HEALTHCHECK_RESULT:
            waiter = self._health_waiters.pop(message["id"], None)
            if waiter is not None and not waiter.done():
                waiter.set_result(message)

    def _slot_count(self, declared: int | None) -> int:
        wanted = self.settings.concurrency or declared or 1
        if not self.is_async and wanted > 1:
            log.warning("run() is not async: serving one prediction at a time, not %d", wanted)
            return 1
        return max(1, wanted)

    def _on_data(self, message: protocol.Message) -> None:
        prediction = self.predictions.get(message.get("id", ""))
        if prediction is None:
            self._discard_folder(message)  # e.g. it failed already on an upload error
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
                message["output"] = await resolve_files(
                    message["output"], prediction, self.settings.upload_url, index
                )
        except Exception as exc:  # noqa: BLE001 - an upload failure fails the prediction
            if not prediction.terminal:
                self._cancel_on_worker(prediction)
                self._complete(prediction, "failed", f"file output: {exc}")
            self._discard_folder(message)
            return
        self._apply(prediction, message)
        self._discard_folder(message)

    def _discard_folder(self, message: protocol.Message) -> None:
        """Remove a prediction folder the worker handed over once its files were sent."""
        folder = message.get("tmpdir")
        if folder and os.path.dirname(os.path.abspath(folder)) == self.tmp_root:
            shutil.rmtree(folder, ignore_errors=True)

    def _apply(self, prediction: Prediction, message: protocol.Message) -> None:
        if prediction.terminal:
            return
        if prediction.status == "starting":
            prediction.status = "processing"
        kind = message[protocol.KIND]
        if kind == FromWorker.LOG:
            prediction.append_log(message["source"], message["data"])
        elif kind == FromWorker.OUTPUT:
            prediction.append_output(message["output"])
        elif kind == FromWorker.METRIC:
            prediction.record_metric(message["name"], message["value"], message["mode"])
        elif kind == FromWorker.DONE:
            self._complete(prediction, "succeeded", output=message.get("output"),
                           predict_time=message.get("predict_time"))
        elif kind == FromWorker.FAILED:
            self._complete(prediction, "failed", message.get("error") or "prediction failed")
        elif kind == FromWorker.CANCELLED:
            self._complete(prediction, "canceled")

    def _complete(self, prediction: Prediction, status: str, error: str | None = None,
                  output: Any = None, predict_time: float | None = None) -> None:
        """Give the slot back first, then settle the prediction (which wakes its waiters)."""
        if self.predictions.pop(prediction.id, None) is not None:
            self.free += 1
        if status == "succeeded":
            prediction.succeed(output, predict_time)
        elif status == "failed":
            prediction.fail(error or "prediction failed", predict_time)
        else:
            prediction.cancel(predict_time)

    def _on_exit(self, code: int | None) -> None:
        how = describe_exit(code)
        if self.shutting_down:
            # a worker that dies while the server drains (or a second Ctrl-C) cannot finish
            # what it was running: without this, drain() waited for them forever
            for prediction in list(self.predictions.values()):
                self._complete(prediction, "failed",
                               f"prediction failed: the worker process {how} during shutdown")
            return
        if self._restarting:
            reason = f"the worker was stopped after a cancel was ignored ({how})"
        else:
            reason = f"the worker process {how}"
        for prediction in list(self.predictions.values()):
            if prediction.cancel_requested:
                prediction.append_log("stderr", f"cogserve: {reason}\n")
                self._complete(prediction, "canceled")
            else:
                self._complete(prediction, "failed", f"prediction failed: {reason}")
        if self._restarting:
            self._restarting = False
            asyncio.get_running_loop().create_task(self.start())
            return
        if self.status == "STARTING":
            if not self.fatal_reason:
                self._setup_logs.append(f"cogserve: {reason} during setup\n")
            self.status = "SETUP_FAILED"
            self._finish_setup("failed")
        elif self.status in ("READY", "BUSY"):
            self.status = "DEFUNCT"
            self.fatal_reason = reason
            log.error("%s; the server stays up but cannot run predictions", reason)

    # ------------------------------------------------------------ predictions

    @property
    def health(self) -> str:
        if self.status == "READY" and self.free <= 0:
            return "BUSY"
        return self.status

    def check_accepting(self) -> None:
        if self.shutting_down:
            raise ServiceError(503, {"error": "The server is shutting down", "status": "failed"})
        if self.status != "READY":
            detail = {
                "STARTING": "Setup has not finished yet. Wait until it has finished, or GET "
                            "/health-check for status.",
                "SETUP_FAILED": "Setup failed: the model cannot run predictions. GET "
                                "/health-check for its logs.",
                "DEFUNCT": f"The model is defunct ({self.fatal_reason}); restart the server.",
            }.get(self.status, f"The model is not ready ({self.status})")
            raise ServiceError(503, {"error": detail, "status": "failed"})

    def validate(self, raw_input: Any, mode: str = "predict") -> list[tuple[str, str]]:
        return self.validators[mode].validate(raw_input)

    def create(
        self,
        prediction_id: str,
        raw_input: dict[str, Any],
        *,
        mode: str = "predict",
        webhook: str | None = None,
        webhook_events_filter: frozenset[str] | None = None,
        output_file_prefix: str | None = None,
        context: dict[str, str] | None = None,
        listeners: list[Any] | None = None,
        remember: bool = False,
        model_context: dict[str, str] | None = None,
    ) -> Prediction:
        """Take a slot and send a validated input to the worker (or raise ServiceError).

        `remember`: keep the finished prediction in `recent` (Cog's routes, which can be
        asked for it again; not V2 or the CLI, whose ids nobody can ask for).
        """
        self.check_accepting()
        if prediction_id in self.predictions:
            raise ServiceError(409, {"error": f"A prediction with id {prediction_id!r} is already "
                                              "running", "status": "failed"})
        if self.free <= 0:
            raise ServiceError(409, {"error": "At capacity - all prediction slots busy",
                                     "status": "failed"})
        schema = self.schema or {}
        output = schema.get("components", {}).get("schemas", {}).get(
            "TrainingOutput" if mode == "train" else "Output", {})
        prediction = Prediction(
            prediction_id,
            self.validators[mode].redact(raw_input),
            kind="training" if mode == "train" else "prediction",
            iterator=output.get("x-cog-array-type") == "iterator",
            webhook=webhook,
            webhook_events_filter=webhook_events_filter,
            output_file_prefix=output_file_prefix,
            context=context,
        )
        for listener in listeners or ():
            prediction.subscribe(listener)
        if self.streaming:  # SSE replay; other models pay nothing
            prediction.subscribe(EventHistory(self.settings.stream_history))
        if remember:  # last: on `completed` the SSE history above is already complete
            prediction.subscribe(self.recent.listener)
        self.free -= 1
        self.predictions[prediction_id] = prediction
        message = protocol.predict(prediction_id, raw_input, Mode(mode), model_context)
        assert self.worker is not None
        try:
            self._maybe_spill(message)
            self.worker.send_data(message)
        except TypeError as exc:  # orjson: nested too deeply, an int beyond 64 bits
            # nothing reached the worker: give the slot back, or it is lost for good
            self.predictions.pop(prediction_id, None)
            self.free += 1
            raise ServiceError(422, {"detail": [{
                "loc": ["body", "input"], "type": "value_error",
                "msg": f"the input cannot be passed to the model: {exc} (JSON nested "
                       "deeper than about 250 levels is refused)"}]}) from None
        prediction.mark_started()
        return prediction

    def _maybe_spill(self, message: protocol.Message) -> None:
        """Inputs over 6 MiB go through a file, not the IPC frame (the worker deletes it)."""
        raw = message["input"]
        # cheap pre-check: only serialise to measure when some value could be large
        if not any(isinstance(v, str) and len(v) > 65536 or isinstance(v, list | dict)
                   for v in raw.values()):
            return
        body = orjson.dumps(raw)
        if len(body) <= protocol.INPUT_SPILL_THRESHOLD:
            return
        fd, path = tempfile.mkstemp(prefix=protocol.INPUT_SPILL_PREFIX, suffix=".json",
                                    dir=self.tmp_root)
        with os.fdopen(fd, "wb") as fh:
            fh.write(body)
        protocol.spill_input(message, path)

    def cancel(self, prediction_id: str) -> bool:
        prediction = self.predictions.get(prediction_id)
        if prediction is None:
            return False
        if not prediction.cancel_requested:
            prediction.cancel_requested = True
            self._cancel_on_worker(prediction)
            loop = asyncio.get_running_loop()
            loop.call_later(self.settings.cancel_timeout, self._cancel_overdue, prediction)
        return True

    def _cancel_on_worker(self, prediction: Prediction) -> None:
        if self.worker is not None:
            try:
                self.worker.send_control(protocol.cancel(prediction.id))
            except (ConnectionError, RuntimeError):
                pass

    def _cancel_overdue(self, prediction: Prediction) -> None:
        """run() ignored the cancel: end the worker so the slot is not held forever."""
        if prediction.terminal or self.worker is None or self.shutting_down:
            return
        log.warning("prediction %s ignored its cancel for %.1fs; restarting the worker",
                    prediction.id, self.settings.cancel_timeout)
        self._restarting = True
        self.status = "STARTING"
        self.worker.kill()

    # ------------------------------------------------------------ health

    async def health_document(self) -> dict[str, Any]:
        status = self.health
        body: dict[str, Any] = {"status": status}
        if status in ("READY", "BUSY") and self.has_healthcheck and self.worker is not None:
            error = await self._user_healthcheck()
            if error is not None:
                body["status"] = "UNHEALTHY"
                body["user_healthcheck_error"] = error
        body["setup"] = {**self.setup, "logs": "".join(self._setup_logs)}
        body["version"] = {
            "cogserve": cogserve.__version__,
            "cog": cogserve.__version__,
            "python": sys.version.split()[0],
        }
        return body

    async def _user_healthcheck(self) -> str | None:
        assert self.worker is not None
        self._health_seq += 1
        hid = self._health_seq
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._health_waiters[hid] = waiter
        self.worker.send_control(protocol.healthcheck(hid))
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


def _non_negative(value: float | None, default: float) -> float:
    return default if value is None or value < 0 else value


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


def generate_id() -> str:
    import base64
    import uuid

    return base64.b32encode(uuid.uuid4().bytes).decode().lower().rstrip("=")


def parse_created_at(value: Any) -> datetime.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
