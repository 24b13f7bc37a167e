"""What a server does with the work a dead server left in the store.

At start (and, with a shared store, whenever a replica's lease runs out: `Durable`'s
sweep) the server claims the unfinished records and pending webhooks whose owner is
gone, and:

- a prediction that was **running** ends `failed` with `STOPPED` as its error (it may
  have had effects, so it is never run a second time), and its `completed` webhook is
  queued after any of its deliveries still pending;
- a prediction that was **queued** (accepted, never sent to a worker) is created again
  from its stored request, under its id, once the model is ready: it runs once;
- pending **webhook deliveries** are sent, in order per prediction.

`encode_request` is what an accepted async prediction's record keeps to make it again:
its `PredictionRequest` (`runtime/request.py`).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections import defaultdict
from typing import TYPE_CHECKING, Protocol

import orjson

from cogserve.runtime.errors import AlreadyRunning, AtCapacity, QueueFull, Refusal, StoreError
from cogserve.runtime.request import PredictionRequest
from cogserve.runtime.store.interface import Claimed, Hook, Record, Stage, Write
from cogserve.wire.protocol import Mode
from cogserve.wire.states import SERVING, Status, WebhookEvent

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cogserve.runtime.prediction import Listener, Prediction
    from cogserve.runtime.store.durable import Durable
    from cogserve.wire.states import Health

log = logging.getLogger("cogserve")


class Service(Protocol):
    """What recovery asks of the facade (`runtime/service.py`, which imports this
    package: a protocol keeps the layers acyclic)."""

    @property
    def ready(self) -> asyncio.Event: ...
    @property
    def status(self) -> Health: ...
    @property
    def restarting(self) -> bool: ...
    @property
    def fatal_reason(self) -> str | None: ...
    def create(self, request: PredictionRequest, *, listeners: list[Listener] | None = None,
               remember: bool = False) -> Prediction: ...


class Webhooks(Protocol):
    """What recovery asks of the webhook senders (`runtime/webhooks.py`)."""

    def listener(self, url: str, events: frozenset[WebhookEvent] | None) -> Listener: ...
    def resume(self, hooks: Sequence[Hook]) -> None: ...

STOPPED = ("prediction failed: the server stopped while it ran (its process ended before "
           "the prediction finished)")
# a request body larger than this is not kept: the input itself (6 MiB and more is spilled
# to a file for the worker) would make the record, and its write before the 202, as big
KEPT_REQUEST_BYTES = 8 * 1024 * 1024
UNKEPT = ("prediction failed: the server stopped before it ran, and its request was too "
          f"large to keep (over {KEPT_REQUEST_BYTES} bytes) to run it again")


def encode_request(request: PredictionRequest, keep_input: bool = True) -> bytes:
    """What an accepted async prediction's record keeps to make it again (its id is the
    record's). `keep_input` False: the body was too big to keep (KEPT_REQUEST_BYTES);
    the rest is kept, for its webhook."""
    return orjson.dumps({
        "mode": request.mode, "input": request.input if keep_input else None,
        "webhook": request.webhook,
        "events": sorted(request.webhook_events_filter)
        if request.webhook_events_filter is not None else None,
        "output_file_prefix": request.output_file_prefix, "context": request.context,
        "model_context": request.model_context, "timeout": request.timeout})


def decode_request(raw: bytes) -> tuple[PredictionRequest, bool]:
    """The request `encode_request` kept, and whether its input was kept."""
    doc = orjson.loads(raw)
    events = doc.get("events")
    kept = doc["input"] is not None
    return PredictionRequest(
        doc["input"] if kept else {}, mode=Mode(doc["mode"]), webhook=doc.get("webhook"),
        webhook_events_filter=frozenset(WebhookEvent(e) for e in events)
        if events is not None else None,
        output_file_prefix=doc.get("output_file_prefix"), context=doc.get("context"),
        model_context=doc.get("model_context"), timeout=doc.get("timeout")), kept


class Recovery:
    """Takes over claimed work for one server (see the module's docstring)."""

    def __init__(self, service: Service, durable: Durable, webhooks: Webhooks) -> None:
        self.service = service
        self.durable = durable
        self.webhooks = webhooks
        self.tasks: set[asyncio.Task[None]] = set()
        self._made: list[asyncio.Future[None]] = []  # the ends of those created again

    async def start(self) -> None:
        """Open the store's writer and claim what was left (a `Service.on_start` hook)."""
        claimed = await self.durable.start()
        self.durable.on_claimed = self.take
        self.take(claimed)

    def take(self, claimed: Claimed) -> None:
        if not claimed.records and not claimed.hooks:
            return
        task = asyncio.get_running_loop().create_task(self._recover(claimed))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _recover(self, claimed: Claimed) -> None:
        hooks: dict[str, list[Hook]] = defaultdict(list)
        for hook in claimed.hooks:
            hooks[hook.id].append(hook)
        writes: list[Write] = []
        queued: list[Record] = []
        for record in claimed.records:
            if record.stage is Stage.QUEUED and record.request is not None and \
                    decode_request(record.request)[1]:
                queued.append(record)
                continue
            final = finished_failed(record, UNKEPT if record.stage is Stage.QUEUED else STOPPED)
            writes.append(final)
            terminal = self._terminal_hook(final, hooks[record.id])
            if terminal is not None:
                writes.append(terminal)
                hooks[record.id].append(terminal)
        log.info("prediction store %s: took over %d unfinished predictions (%d ran, %d "
                 "queued) and %d pending webhook deliveries", self.durable.store.description,
                 len(claimed.records), len(claimed.records) - len(queued), len(queued),
                 len(claimed.hooks))
        if writes:
            try:
                await asyncio.wrap_future(self.durable.post_waited(writes))
            except StoreError:
                pass  # kept and written later; the server is UNHEALTHY meanwhile
        for entries in hooks.values():
            if entries:
                self.webhooks.resume(entries)
        if queued:
            await self.service.ready.wait()
            for record in queued:
                await self._run_again(record)

    def _terminal_hook(self, final: Record, pending: list[Hook]) -> Hook | None:
        if final.request is None:
            return None
        request, _ = decode_request(final.request)
        events = request.webhook_events_filter
        if request.webhook is None or (events is not None
                                       and WebhookEvent.COMPLETED not in events):
            return None
        seq = max([hook.seq for hook in pending] + [time.time_ns()]) + 1
        return Hook(final.id, seq, "completed", request.webhook, final.body,
                    orjson.dumps(request.context or {}))

    async def _run_again(self, record: Record) -> None:
        """A queued prediction, created again under its id (waiting for a slot if the
        recovered ones outnumber them)."""
        assert record.request is not None
        request, _ = decode_request(record.request)
        request = request._replace(id=record.id)  # namedtuple's documented copy-with
        service = self.service
        listeners = []
        if request.webhook is not None:
            listeners.append(self.webhooks.listener(request.webhook,
                                                    request.webhook_events_filter))
        while True:
            if service.status not in SERVING and not service.restarting:
                self._fail(record, f"prediction failed: the model cannot run "
                                   f"({service.fatal_reason or 'setup failed'})")
                return
            try:
                prediction = service.create(request, listeners=list(listeners),
                                            remember=True)
                self._made = [done for done in self._made if not done.done()]
                self._made.append(prediction.done)
                break
            except AlreadyRunning:
                return
            except (AtCapacity, QueueFull):  # more came back than there are places:
                # wait for one of those made again to end (or a moment, if none runs)
                waiting = [done for done in self._made if not done.done()]
                if waiting:
                    await asyncio.wait(waiting, timeout=1.0,
                                       return_when=asyncio.FIRST_COMPLETED)
                else:
                    await asyncio.sleep(0.1)
            except Refusal as exc:
                self._fail(record, f"prediction failed: {exc}")
                return
        try:
            await self.durable.accept(prediction, record.request)
        except StoreError:
            pass  # it runs; its record is written when the store answers again

    def _fail(self, record: Record, error: str) -> None:
        final = finished_failed(record, error)
        hook = self._terminal_hook(final, [])
        self.durable.post([final] if hook is None else [final, hook])
        if hook is not None:
            self.webhooks.resume([hook])


def finished_failed(record: Record, error: str) -> Record:
    """`record` ended `failed` with `error` now (it keeps its request, for its webhook)."""
    now = time.time()
    body = orjson.loads(record.body)
    body.update(status=Status.FAILED, error=error, output=None,
                completed_at=datetime.datetime.fromtimestamp(now, datetime.UTC).isoformat())
    return Record(record.id, record.kind, Status.FAILED, Stage.FINISHED, record.created,
                  orjson.dumps(body), now, record.request)
