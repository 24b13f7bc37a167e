"""The runtime's facade: the only runtime module a front end calls.

`Service` joins the two owners of runtime state, and holds none of its own beyond the
model's validators: `Workers` (`runtime/workers.py`: the processes, setup, control
frames, exits) and `Predictions` (`runtime/inflight.py`: the table of running and
queued predictions, slots, deadlines, cancels, completion). Front ends (Cog's routes,
V2, the CLI, Ray) speak to it in the runtime's terms; what it refuses is raised as a
`Refusal` (`runtime/errors.py`), which each of them maps to its own answer.

Public surface:
- lifecycle: `start`, `go`, `begin_shutdown`, `drain`, `stop`, `kill_workers`, `reload`;
  `ready` (an Event set once setup ended), `shutting_down`, `restarting`
- the model: `config`, `settings`, `schema`, `streaming`, `versions`, `model_name`,
  `fatal_reason`, `setup` (a `SetupView`), `worker_count`, `tmp_root`
- health: `status` (stored state), `current_health` (with BUSY), `health()` (a
  `HealthSnapshot`, running the model's healthcheck), `capacity()`
- predictions: `validate`, `validator`, `check_accepting`, `check_capacity`,
  `create` (a `PredictionRequest`, `runtime/request.py`), `new_id`, `cancel`,
  `cancel_and_wait`
- one question per id: `lookup` (a `runtime/found.py` answer: running, queued,
  finished, stored, evicted or unknown); `running`, `finished` and `holds` for the
  hot paths that need one part of it without awaiting
- the store (`runtime/store/`): `accept` (an async prediction written before its 202),
  `check_store`, `page` (GET /predictions); `durable` (None for memory) for the wiring
- hooks: `events` (the `EventBus`), `resolver`, `on_schema`, `on_drain`, `on_start`
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from cogserve.model.config import ModelConfig
from cogserve.model.validation import FieldError, InputValidator
from cogserve.runtime import ids
from cogserve.runtime.errors import (
    AlreadyRunning,
    StoreUnavailable,
    UnknownPrediction,
)
from cogserve.runtime.events import EventBus, RuntimeEvent
from cogserve.runtime.found import Found, Queued, Running
from cogserve.runtime.frames import WorkerFrames
from cogserve.runtime.health import HealthSnapshot
from cogserve.runtime.history import EventHistory
from cogserve.runtime.inflight import Predictions, drain
from cogserve.runtime.links import WorkerReports
from cogserve.runtime.model_view import ModelView
from cogserve.runtime.outputs import FileOutputs
from cogserve.runtime.pool import WorkerState
from cogserve.runtime.prediction import Listener, Prediction
from cogserve.runtime.readiness import Readiness
from cogserve.runtime.request import PredictionRequest
from cogserve.runtime.resolver import Resolver
from cogserve.runtime.settings import Settings
from cogserve.runtime.setup_report import SetupView
from cogserve.runtime.slots import WorkerSlots
from cogserve.runtime.store.keeper import Store
from cogserve.runtime.supervisor import Spawner, WorkerProcess
from cogserve.runtime.workers import ModelInfo, Workers
from cogserve.wire import protocol
from cogserve.wire.protocol import Mode
from cogserve.wire.states import Health

if TYPE_CHECKING:
    from cogserve.runtime.store.durable import Durable
    from cogserve.runtime.store.interface import Page

log = logging.getLogger("cogserve")
CANCEL_SETTLE_MARGIN = 5.0  # seconds past the cancel timeout for a stopped worker to end


class Service:
    def __init__(self, config: ModelConfig, settings: Settings, *, gate: bool = False,
                 on_setup_log: Callable[[str], None] | None = None,
                 spawner: Spawner = WorkerProcess, durable: Durable | None = None) -> None:
        self.settings = settings
        self.events = EventBus()  # what happens here, for metrics and tracing
        # the parent's name resolution for what connects out (uploads here, webhooks in
        # `assembly`): one per server, so retries to a dead name share its cached answer
        self.resolver = Resolver(settings.url_policy)
        listener = WorkerReports(self._on_schema, self._on_settled)
        self._workers = Workers(config, settings, listener, self.events,
                                spawner=spawner, gate=gate, on_setup_log=on_setup_log)
        slots = WorkerSlots(self._workers)
        self._predictions = Predictions(
            slots, self.events, queue_size=settings.queue_size,
            queue_timeout=settings.queue_timeout, cancel_timeout=settings.cancel_timeout)
        frames = WorkerFrames(self._predictions, slots, self.events,
                              FileOutputs(settings.upload_url, self.events, self.resolver),
                              self._workers.folders.worker_dirs)
        listener.on_data = frames.on_data  # the per-frame path: one call
        listener.on_lost = self._predictions.on_lost
        # the recent cache, before the durable store (--store; None: memory only),
        # written by its listener; a queued prediction it keeps starts once its start
        # is written
        self._store = Store(settings.recent_count, settings.recent_bytes, durable)
        self.durable = durable
        if durable is not None:
            self._predictions.record_start = durable.record_start
        self._model = ModelView()
        self.on_schema: list[Callable[[], None]] = []
        # awaited after the last prediction drained (e.g. queued webhooks get to finish)
        self.on_drain: list[Callable[[], Awaitable[None]]] = []
        # awaited when the server starts, before the workers (the store's recovery)
        self.on_start: list[Callable[[], Awaitable[None]]] = []
        self._started = False
        self._readiness = Readiness(self._workers, self._predictions, self._store,
                                    settings.queue_size)
        # asked per request, and per metrics scrape: bound once
        self.check_accepting = self._readiness.check_accepting
        self.capacity = self._readiness.capacity
        # `finished(id, kind)`: a recently finished prediction (or training) as the cache
        # keeps it, the bytes a sync answer sends (per request: the cache's own get)
        self.finished = self._store.cache.get

    # ------------------------------------------------------------ lifecycle

    @property
    def ready(self) -> asyncio.Event:
        return self._workers.ready

    @property
    def shutting_down(self) -> bool:
        return self._workers.shutting_down

    async def start(self) -> None:
        """Run the on_start hooks, then start the workers; once: a second call does
        nothing. `serve` starts the service before it imports the HTTP stack (the worker
        boots meanwhile), then the app's lifespan calls this again; other callers (Ray,
        tests) start it from the lifespan alone."""
        if self._started:
            return
        self._started = True
        for hook in self.on_start:
            await hook()
        await self._workers.start()

    def go(self) -> None:
        """`cogserve predict`: the schema was read; let the worker run setup()."""
        self._workers.go()

    def begin_shutdown(self) -> None:
        """Refuse new predictions from now on (those in flight finish: see `drain`)."""
        self._workers.shutting_down = True

    def kill_workers(self) -> None:
        self._workers.kill()

    async def stop(self) -> None:
        await self._workers.stop()
        await self._store.close()

    async def reload(self) -> None:
        """New code (--reload): restart every worker, each once its predictions finished."""
        await self._workers.reload()

    async def drain(self) -> None:
        """Let in-flight (and queued) predictions finish, within bounds, then run the
        on_drain hooks.

        Predictions get `drain_timeout` seconds; those still running are then canceled,
        and those that outlive `cancel_timeout` too are failed and the workers are killed.
        So a shutdown takes at most drain_timeout + cancel_timeout (+ the webhook drain),
        which must fit in the orchestrator's grace period (Kubernetes:
        terminationGracePeriodSeconds, default 30 s, after which it sends SIGKILL).
        """
        if not await drain(self._predictions, self.settings.drain_timeout,
                           self.settings.cancel_timeout):
            self.kill_workers()
        for hook in self.on_drain:
            await hook()

    # ------------------------------------------------------------ the model

    @property
    def config(self) -> ModelConfig:
        return self._workers.config  # --reload may have read a new cog.yaml

    @property
    def schema(self) -> dict[str, Any] | None:
        return self._model.schema

    @property
    def streaming(self) -> bool:
        return self._model.streaming

    @property
    def versions(self) -> dict[str, str]:
        return self._model.versions

    @property
    def descriptions(self) -> dict[str, str]:
        """The entry points' docstrings by `Mode`, as the worker reported them."""
        return self._model.descriptions

    @property
    def model_name(self) -> str:
        """The model's name under /v2: --model-name, else the last part of cog.yaml's
        `image` (no tag), else the folder."""
        return self.settings.model_name or self.config.default_name()

    @property
    def fatal_reason(self) -> str | None:
        return self._workers.fatal_reason

    @property
    def setup(self) -> SetupView:
        return self._workers.setup.view()

    @property
    def worker_count(self) -> int:
        return len(self._workers.pool)

    @property
    def tmp_root(self) -> str:
        """This server's folder for temporary files (spilled inputs and tensors)."""
        return self._workers.tmp_root

    def remove_folders(self) -> None:
        """Remove this server's temporary folders (`Workers.stop` does it too): for a
        process that may end without stopping it."""
        self._workers.folders.remove()

    def _on_schema(self, model: ModelInfo) -> None:
        self._model.update(model)
        self._predictions.configure_batching(model.batch, ahead=not model.is_async)
        for callback in self.on_schema:
            callback()

    def _on_settled(self, state: WorkerState) -> None:
        predictions = self._predictions
        if predictions.backlog is None:
            return
        if state in (WorkerState.SETUP_FAILED, WorkerState.DEFUNCT):
            reason = self.fatal_reason or "setup failed"
            predictions.fail_queued(f"prediction failed: the model cannot run ({reason})")
        else:
            predictions.run_queued()

    # ------------------------------------------------------------ health

    @property
    def status(self) -> Health:
        """The server's state: derived from its workers' (see `Pool.state`)."""
        return self._readiness.status

    @property
    def current_health(self) -> Health:
        """`status`, with BUSY for READY with every slot taken and no place in the queue."""
        return self._readiness.current

    @property
    def restarting(self) -> bool:
        """A worker is on its way back (see `Readiness.restarting`)."""
        return self._readiness.restarting

    async def health(self) -> HealthSnapshot:
        """The health now; runs the model's healthcheck() when it has one and serves."""
        return await self._readiness.snapshot(
            self.setup, self.versions,
            self._workers.user_healthcheck if self._model.has_healthcheck else None)

    # ------------------------------------------------------------ predictions

    def validate(self, raw_input: Any, mode: Mode = Mode.PREDICT) -> list[FieldError]:
        return self._model.validators[mode].validate(raw_input)

    def validator(self, mode: Mode) -> InputValidator:
        """The compiled input schema of `mode` (the CLI coerces `-i` values with it)."""
        return self._model.validators[mode]

    def check_capacity(self) -> None:
        """Raise what create() would for want of a slot (AtCapacity) or of a place in the
        queue (QueueFull). The HTTP front end asks before it reads a large body, so six
        95 MB bodies bound for 409 are not read into memory first."""
        self._predictions.check_capacity()

    def new_id(self) -> str:
        """A new prediction id (`runtime/ids.py`), with `settings.id_prefix`."""
        return ids.new_id(self.settings.id_prefix)

    def create(self, request: PredictionRequest, *, listeners: list[Listener] | None = None,
               remember: bool = False) -> Prediction:
        """Send a validated input to a free worker slot, or queue it (or raise a Refusal:
        AtCapacity with no free slot and no queue, QueueFull when the queue is full).

        `request.id` None: a new id (`new_id`), made once the prediction has a place.
        `remember`: keep the finished prediction in the store (Cog's routes, which can
        be asked for it again; not V2 or the CLI, whose ids nobody can ask for).
        `request.timeout` is the request's own deadline; `--predict-timeout` caps it.
        """
        self.check_accepting()
        predictions = self._predictions
        prediction_id, mode = request.id, request.mode
        if prediction_id is not None and prediction_id in predictions.running:
            raise AlreadyRunning(prediction_id)
        member = predictions.place(mode)
        if prediction_id is None:
            prediction_id = self.new_id()
        model = self._model
        settings = self.settings
        raw_input = request.input
        prediction = Prediction(
            prediction_id,
            model.validators[mode].redact(raw_input),
            kind="training" if mode is Mode.TRAIN else "prediction",
            iterator=model.iterators.get(mode, False),
            webhook=request.webhook,
            webhook_events_filter=request.webhook_events_filter,
            output_file_prefix=request.output_file_prefix,
            context=request.context,
            log_limit=settings.logs_limit,
        )
        timeout, limit = request.timeout, settings.predict_timeout
        prediction.timeout = min(timeout, limit) if timeout and limit else (timeout or limit)
        for listener in listeners or ():
            prediction.subscribe(listener)
        if model.streaming:  # SSE replay; other models pay nothing
            prediction.subscribe(EventHistory(settings.stream_history,
                                              settings.stream_history_bytes))
        if remember:  # last: on `completed` the SSE history above is already complete
            self._store.remember(prediction)
        message = protocol.predict(prediction_id, raw_input, mode, request.model_context)
        self.events.emit(RuntimeEvent.PREDICTION_CREATED, prediction=prediction, message=message)
        predictions.submit(prediction, message, member)
        return prediction

    def check_store(self) -> None:
        """Raise StoreUnavailable while the durable store fails: what `accept` would."""
        self._store.check_writable()

    async def accept(self, prediction: Prediction, request: PredictionRequest,
                     size: int) -> bytes | None:
        """Write a prediction accepted asynchronously (a webhook, `respond-async`)
        before it is answered: the body recorded, for the 202 (None without a durable
        store). If the store fails it must not run unrecorded: it is canceled and
        StoreUnavailable raised. `size`: the request body's bytes."""
        try:
            return await self._store.accept(prediction, request, size)
        except StoreUnavailable:
            with contextlib.suppress(UnknownPrediction):
                self._predictions.cancel(prediction.id)
            raise

    async def lookup(self, prediction_id: str, kind: str = "prediction", *,
                     same_kind: bool = False, evictions: bool = True) -> Found:
        """The one question a front end asks about an id: running or queued here (of
        either kind, unless `same_kind`), finished here, stored, evicted (asked only
        with `evictions`: a PUT or a cancel does not care), or unknown. Raises
        StoreUnavailable when the durable store cannot be read."""
        running = self._predictions.get(prediction_id)
        if running is not None and (not same_kind or running.kind == kind):
            return Queued(running) if running.started_us is None else Running(running)
        return await self._store.find(prediction_id, kind, evictions)

    def running(self, prediction_id: str) -> Prediction | None:
        """The queued or running prediction with this id (of either kind)."""
        return self._predictions.get(prediction_id)

    def holds(self, prediction_id: str) -> bool:
        """This server knows the id: running, queued or recently finished."""
        return prediction_id in self._predictions.running or self._store.holds(prediction_id)

    async def page(self, kind: str, status: str | None, limit: int, cursor: str | None
                   ) -> Page:
        """`GET /predictions`: a page, newest first (`runtime/store/listing.py`); raises
        ValueError for a cursor not made here, StoreUnavailable if the store fails."""
        return await self._store.page(self._predictions.running.values(), kind, status,
                                      limit, cursor)

    def cancel(self, prediction_id: str) -> None:
        """Cancel a queued or running prediction (or raise UnknownPrediction)."""
        self._predictions.cancel(prediction_id)

    async def cancel_and_wait(self, prediction_id: str) -> Prediction | None:
        """Cancel a running id and wait for its end (bounded: a run() that ignores the
        cancel has its worker stopped after the cancel timeout); the prediction, or None
        when nothing with this id runs."""
        running = self._predictions.get(prediction_id)
        if running is not None:
            self._predictions.cancel(prediction_id)
            bound = self.settings.cancel_timeout + CANCEL_SETTLE_MARGIN
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(running.done), bound)
        return running
