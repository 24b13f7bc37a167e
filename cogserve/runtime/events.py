"""What happens in the runtime, announced to whoever watches (metrics, tracing).

The runtime's owners (`Service`, the webhook senders, the upload code, SSE streams,
the V2 front end) each call `EventBus.emit` at the one place a thing happens; the
observers subscribe, each to the events it handles. An event nobody subscribed to
(every event with metrics off; `prediction_created` without tracing) costs an emit one
dict lookup, so the runtime never needs to know whether anyone is watching.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import Any


class RuntimeEvent(enum.Enum):
    """Things that happened; the fields each carries are listed with it."""

    # restart: bool (a worker ran before this one), worker: int (its index), pid: int | None
    WORKER_STARTED = "worker_started"
    # worker: int (its index), expected: bool (stopped by the server, not a crash)
    WORKER_EXITED = "worker_exited"
    SETUP_FINISHED = "setup_finished"  # status: str ("succeeded" | "failed"), seconds: float
    # prediction: Prediction, message: the predict frame, which an observer may extend
    # (tracing adds the trace context the worker's span continues)
    PREDICTION_CREATED = "prediction_created"
    PREDICTION_REFUSED = "prediction_refused"  # prediction: created, but never sent (422)
    PREDICTION_COMPLETED = "prediction_completed"  # prediction: Prediction
    # a @batch model's batch left for a worker: size: int, wait: float (seconds its
    # oldest member waited for it to fill)
    BATCH_FORMED = "batch_formed"
    WEBHOOK_ATTEMPT = "webhook_attempt"  # outcome: WebhookOutcome
    UPLOAD = "upload"  # bytes: int, ok: bool
    DOWNLOADS = "downloads"  # bytes: int, failures: int (reported by the worker)
    SSE_CLIENT = "sse_client"  # change: SSEChange
    V2_INFERENCE = "v2_inference"  # model: str, outcome: str ("succeeded" | "failed" | ...)

    # members are singletons compared by identity: hashed by identity too, in C, rather
    # than by Enum.__hash__ (a Python call) on every emit
    __hash__ = object.__hash__


class WebhookOutcome(enum.Enum):
    DELIVERED = "delivered"  # the receiver answered (a 4xx is an answer: not retried)
    RETRIED = "retried"  # an attempt failed and another follows
    FAILED = "failed"  # every attempt failed: the event is lost


class SSEChange(enum.Enum):
    CONNECTED = "connected"
    DISCONNECTED = "disconnected"
    LAGGED = "lagged"  # cut off for falling too far behind


Observer = Callable[[RuntimeEvent, dict[str, Any]], None]


class EventBus:
    """One per `Service`; observers are called synchronously, in order, on the loop."""

    __slots__ = ("_observers",)

    def __init__(self) -> None:
        self._observers: dict[RuntimeEvent, list[Observer]] = {}

    def subscribe(self, observer: Observer, events: Iterable[RuntimeEvent]) -> None:
        """Call `observer` for each of `events` (the ones it handles)."""
        for event in events:
            self._observers.setdefault(event, []).append(observer)

    def emit(self, event: RuntimeEvent, **fields: Any) -> None:
        observers = self._observers.get(event)
        if observers is not None:
            for observer in observers:
                observer(event, fields)
