"""Webhooks: POST a prediction's state to the URL its creator gave, in order, off the hot path.

One `WebhookSender` per prediction that has a webhook, subscribed as a Prediction
listener. The listener itself only records that something changed (no I/O, no JSON);
a task of the sender's own takes the snapshots and POSTs them one at a time, so the
deliveries of one prediction arrive in the order they happened, and a slow, dead or
hanging receiver holds up nothing but its own queue: never the prediction, never
another prediction, never the slot.

`start` and `completed` are queued at once. `output` and `logs` changes are throttled
to one delivery per interval (COG_THROTTLE_RESPONSE_INTERVAL, default 0.5 s); a
throttled delivery carries the full state as it is when it is taken, and a change
still waiting when the prediction ends is sent then, so throttling never loses the
final state. An intermediate state that is still queued is replaced by a newer one,
so a receiver slower than the model gets fewer, fresher updates instead of a backlog.

With COGSERVE_WEBHOOK_SECRET set, every attempt is signed the Standard Webhooks way
(`runtime/signing.py`); a delivery's `webhook-id` is the prediction's id and the
delivery's number, the same on each of its retries (and, with an outbox, after a restart).

Failed deliveries (connection errors, timeouts, 5xx, 429) are retried with
exponential backoff up to a bounded number of attempts; an intermediate state that a
newer one has superseded is not retried.

With a durable store (`--store`), the deliveries are an outbox (`durable.Outbox`): each
is written to the store before it is sent and removed once it was made or given up
on, so those pending when the server died are sent by the next one (`resume`): at
least once, in order per prediction. Without one, nothing of this runs.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import orjson

import cogserve
from cogserve.process import spans
from cogserve.process.envvars import env_duration, env_int, webhook_secret
from cogserve.process.netpolicy import BlockedAddress
from cogserve.runtime.events import EventBus, RuntimeEvent, WebhookOutcome
from cogserve.runtime.prediction import Prediction
from cogserve.wire.states import Event, WebhookEvent

if TYPE_CHECKING:
    import concurrent.futures

    import httpx2

    from cogserve.runtime.resolver import Resolver
    from cogserve.runtime.signing import Signer
    from cogserve.runtime.store.durable import Durable, Outbox
    from cogserve.runtime.store.interface import Hook

log = logging.getLogger("cogserve")

ALL_EVENTS = frozenset(WebhookEvent)
USER_AGENT = f"cogserve/{cogserve.__version__}"
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class Delivery(StrEnum):
    """What a queued delivery is: only UPDATEs are throttled and may be superseded."""

    START = "start"
    UPDATE = "update"
    COMPLETED = "completed"


@dataclass(slots=True)
class QueuedDelivery:
    """A delivery waiting to be sent; `seq` and `written` only with an outbox (its
    place there, and the future of its write, awaited before it is sent); `number`: its
    place among the prediction's deliveries (the outbox's `seq` where there is one), which
    names it in `webhook-id`."""

    kind: Delivery
    body: bytes
    seq: int = 0
    number: int = 0
    written: concurrent.futures.Future[None] | None = None


@dataclass(frozen=True)
class WebhookConfig:
    interval: float = 0.5  # at most one output/logs delivery per interval
    max_attempts: int = 6  # per delivery, including the first
    timeout: float = 10.0  # per attempt: a hanging receiver costs at most this
    backoff: float = 0.1  # first retry delay; doubles per attempt
    max_backoff: float = 5.0
    signer: Signer | None = None  # COGSERVE_WEBHOOK_SECRET: sign every attempt

    @classmethod
    def from_env(cls) -> WebhookConfig:
        return cls(
            interval=env_duration("COG_THROTTLE_RESPONSE_INTERVAL", 0.5, minimum=0),
            max_attempts=env_int("COGSERVE_WEBHOOK_MAX_ATTEMPTS", 6, minimum=1) or 6,
            timeout=max(0.1, env_duration("COGSERVE_WEBHOOK_TIMEOUT", 10.0, minimum=0)),
            signer=_signer(webhook_secret()),
        )


class Webhooks:
    """The server's webhook deliveries: the config, one pooled client (its names resolved
    by the server's `resolver`), the senders' tasks (so a graceful shutdown can let them
    finish)."""

    def __init__(self, config: WebhookConfig, resolver: Resolver,
                 bus: EventBus | None = None, durable: Durable | None = None) -> None:
        self.config = config
        self.resolver = resolver
        self.bus = bus or EventBus()  # delivery outcomes, for metrics
        self.durable = durable  # the store of the outbox; None: deliveries in memory only
        self.active: set[asyncio.Task[None]] = set()
        self._client: httpx2.AsyncClient | None = None

    def listener(self, url: str, events: frozenset[WebhookEvent] | None) -> WebhookSender:
        """The sender for a request that names a webhook (`CogRoutes.webhook_listener`)."""
        return WebhookSender(url, events, self)

    def resume(self, hooks: Sequence[Hook]) -> None:
        """Send the deliveries a previous server left in the outbox (one prediction's,
        in order), and take them out of it as they are made."""
        from cogserve.runtime.store.durable import Outbox

        assert self.durable is not None and hooks
        first = hooks[0]
        sender = WebhookSender(first.url, None, self)
        sender.prediction_id = first.id
        sender.headers = orjson.loads(first.headers)
        sender.outbox = Outbox(self.durable, first.id, first.url, first.headers,
                               after=max(hook.seq for hook in hooks))
        sender.queue.extend(QueuedDelivery(Delivery(hook.delivery), hook.body, hook.seq, hook.seq)
                            for hook in hooks)
        sender.start()

    def client(self) -> httpx2.AsyncClient:
        """One pooled client for every webhook; connections are unbounded because each
        sender has at most one request in flight, so their number is bounded by the
        number of predictions with a webhook, and one hanging receiver must not take
        the pool from the others."""
        if self._client is None:
            import httpx2  # imported on first use: it costs 25 ms of every server's start

            from cogserve.runtime import transport

            self._client = httpx2.AsyncClient(
                # names resolve in cogserve's bounded resolver: a dead DNS name cannot starve
                # other webhooks or hold the exit; addresses are checked by the URL policy
                transport=transport.transport(self.resolver, limits=httpx2.Limits(
                    max_connections=None, max_keepalive_connections=32)),
                headers={"User-Agent": USER_AGENT, "Content-Type": "application/json"},
                follow_redirects=False,
            )
        return self._client

    def track(self, task: asyncio.Task[None]) -> None:
        self.active.add(task)
        task.add_done_callback(self.active.discard)

    async def drain(self, timeout: float) -> None:
        """Let queued deliveries finish (bounded), e.g. before the server exits."""
        if self.active:
            await asyncio.wait(set(self.active), timeout=timeout)


class WebhookSender:
    """The webhook deliveries of one prediction (a Prediction listener)."""

    def __init__(self, url: str, events: frozenset[WebhookEvent] | None,
                 webhooks: Webhooks) -> None:
        self.url = url
        self.events = ALL_EVENTS if events is None else events
        self.webhooks = webhooks
        self.config = webhooks.config
        self.queue: deque[QueuedDelivery] = deque()
        self.task: asyncio.Task[None] | None = None
        self.outbox: Outbox | None = None  # with a durable store (made on the first push)
        self.dirty = False  # a throttled change not yet queued
        self.timer: asyncio.TimerHandle | None = None
        self.last_update = -math.inf
        self.headers: dict[str, str] = {}
        self.prediction_id = ""
        self.numbered = 0  # deliveries queued so far (without an outbox, their numbers)

    # ------------------------------------------------------------ listener

    def __call__(self, prediction: Prediction, event: Event, payload: dict[str, Any]) -> None:
        if event is Event.OUTPUT:
            if WebhookEvent.OUTPUT in self.events:
                self._changed(prediction)
        elif event is Event.LOG:
            if WebhookEvent.LOGS in self.events:
                self._changed(prediction)
        elif event is Event.START:
            self.headers = prediction.context
            if WebhookEvent.START in self.events:
                self._push(Delivery.START, prediction)
        elif event is Event.COMPLETED:
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            if WebhookEvent.COMPLETED in self.events:
                self._push(Delivery.COMPLETED, prediction)
            elif self.dirty:
                self._push(Delivery.UPDATE, prediction)
            self.dirty = False

    def _changed(self, prediction: Prediction) -> None:
        if self.timer is not None:
            self.dirty = True  # the scheduled delivery will carry this change
            return
        loop = asyncio.get_running_loop()
        wait = self.last_update + self.config.interval - loop.time()
        if wait <= 0:
            self._update(prediction)
        else:
            self.dirty = True
            self.timer = loop.call_later(wait, self._on_timer, prediction)

    def _on_timer(self, prediction: Prediction) -> None:
        self.timer = None
        if self.dirty and not prediction.terminal:
            self._update(prediction)

    def _update(self, prediction: Prediction) -> None:
        self.dirty = False
        self.last_update = asyncio.get_running_loop().time()
        self._push(Delivery.UPDATE, prediction)

    def _push(self, kind: Delivery, prediction: Prediction) -> None:
        body = prediction.encoded()
        self.prediction_id = prediction.id
        durable = self.webhooks.durable
        if durable is not None and self.outbox is None:
            from cogserve.runtime.store.durable import Outbox

            self.outbox = Outbox(durable, prediction.id, self.url, orjson.dumps(self.headers))
        last = self.queue[-1] if self.queue else None
        if kind is Delivery.UPDATE and last is not None and last.kind is Delivery.UPDATE:
            last.body = body  # not sent yet: the newer state replaces it
            if self.outbox is not None:
                last.seq, last.written = self.outbox.add(kind, body, replaces=last.seq)
                last.number = last.seq
        else:
            self.numbered += 1
            queued = QueuedDelivery(kind, body, number=self.numbered)
            if self.outbox is not None:
                queued.seq, queued.written = self.outbox.add(kind, body)
                queued.number = queued.seq
            self.queue.append(queued)
        self.start()

    def start(self) -> None:
        """Start the delivery task, unless it runs already."""
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._run())
            self.webhooks.track(self.task)

    # ------------------------------------------------------------ delivery

    async def _run(self) -> None:
        try:
            while self.queue:
                queued = self.queue.popleft()
                outbox = self.outbox
                if queued.written is not None:
                    await _written(queued.written)
                await self._deliver(queued)
                if outbox is not None:
                    outbox.done(queued.seq)
        finally:
            self.task = None

    async def _deliver(self, queued: QueuedDelivery) -> None:
        """One event, retried as needed; a span (with tracing on) covers all attempts and
        its context is the `traceparent` sent, as the incoming one is without tracing."""
        with spans.client_span("webhook", self.headers,
                               **{"cog.webhook.event": queued.kind}) as headers:
            await self._attempts(queued, headers)

    async def _attempts(self, queued: QueuedDelivery, headers: dict[str, str]) -> None:
        import httpx2

        config = self.config
        kind, body = queued.kind, queued.body
        message_id = f"msg_{self.prediction_id}_{queued.number}"
        reason = ""
        for attempt in range(config.max_attempts):
            retry_after = 0.0
            if config.signer is not None:  # signed per attempt: its timestamp is now
                headers = {**headers, **config.signer.headers(message_id, body)}
            try:
                response = await self.webhooks.client().post(
                    self.url, content=body, headers=headers, timeout=config.timeout)
                if response.status_code not in _RETRY_STATUSES:
                    if response.status_code >= 400:
                        log.warning("webhook %s answered HTTP %d; not retrying", self.url,
                                    response.status_code)
                        self._outcome(WebhookOutcome.FAILED)
                    else:
                        self._outcome(WebhookOutcome.DELIVERED)
                    return
                reason = f"HTTP {response.status_code}"
                retry_after = _retry_after(response)
            except httpx2.HTTPError as exc:
                if _blocked(exc):  # the URL policy refuses it: retrying cannot help
                    log.warning("webhook %s not sent: %s", self.url, exc)
                    return
                reason = f"{type(exc).__name__}: {exc}".rstrip(": ")
            except Exception as exc:  # noqa: BLE001 - a bad URL must not kill the sender
                log.warning("webhook %s cannot be sent: %s", self.url, exc)
                self._outcome(WebhookOutcome.FAILED)
                return
            if kind is Delivery.UPDATE and self.queue:
                return  # a newer state is queued; it supersedes this one
            if attempt + 1 < config.max_attempts:
                self._outcome(WebhookOutcome.RETRIED)
                delay = min(config.max_backoff, config.backoff * 2 ** attempt)
                await asyncio.sleep(max(delay, min(retry_after, config.max_backoff)))
        log.warning("webhook %s failed after %d attempts (%s); giving up on this %s event",
                    self.url, config.max_attempts, reason, kind)
        self._outcome(WebhookOutcome.FAILED)

    def _outcome(self, outcome: WebhookOutcome) -> None:
        self.webhooks.bus.emit(RuntimeEvent.WEBHOOK_ATTEMPT, outcome=outcome)


def _signer(key: bytes | None) -> Signer | None:
    """The signer of a configured secret; none (and no HMAC imported) without one."""
    if key is None:
        return None
    from cogserve.runtime.signing import Signer

    return Signer(key)


async def _written(future: concurrent.futures.Future[None]) -> None:
    """Wait until the delivery is in the outbox; if the store failed, send it anyway
    (the server is UNHEALTHY meanwhile, and the write is retried)."""
    from cogserve.runtime.errors import StoreError

    try:
        await asyncio.wrap_future(future)
    except StoreError:
        pass


def _blocked(exc: BaseException | None) -> bool:
    while exc is not None:
        if isinstance(exc, BlockedAddress):
            return True
        exc = exc.__cause__ or exc.__context__  # httpcore2 re-raises: only the context stays
    return False


def _retry_after(response: httpx2.Response) -> float:
    try:
        return float(response.headers.get("retry-after", "0"))
    except ValueError:
        return 0.0
