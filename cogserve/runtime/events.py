"""What happens in the runtime, announced to whoever watches (metrics, tracing).

The runtime's owners (`Service`, the webhook senders, the upload code, SSE streams,
the V2 front end) each call `EventBus.emit` at the one place a thing happens; the
observers subscribe. With no observer (metrics off) an emit is one empty loop, so the
runtime never needs to know whether anyone is watching.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any


class RuntimeEvent(enum.Enum):
    """Things that happened; the fields each carries are listed with it."""

    WORKER_STARTED = "worker_started"  # restart: bool (a worker ran before this one)
    WORKER_EXITED = "worker_exited"  # expected: bool (stopped by the server, not a crash)
    SETUP_FINISHED = "setup_finished"  # status: str ("succeeded" | "failed"), seconds: float
    # prediction: Prediction, message: the predict frame, which an observer may extend
    # (tracing adds the trace context the worker's span continues)
    PREDICTION_CREATED = "prediction_created"
    PREDICTION_REFUSED = "prediction_refused"  # prediction: created, but never sent (422)
    PREDICTION_COMPLETED = "prediction_completed"  # prediction: Prediction
    WEBHOOK_ATTEMPT = "webhook_attempt"  # outcome: WebhookOutcome
    UPLOAD = "upload"  # bytes: int, ok: bool
    DOWNLOADS = "downloads"  # bytes: int, failures: int (reported by the worker)
    SSE_CLIENT = "sse_client"  # change: SSEChange
    V2_INFERENCE = "v2_inference"  # model: str, outcome: str ("succeeded" | "failed" | ...)


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

    __slots__ = ("observers",)

    def __init__(self) -> None:
        self.observers: list[Observer] = []

    def subscribe(self, observer: Observer) -> None:
        self.observers.append(observer)

    def emit(self, event: RuntimeEvent, **fields: Any) -> None:
        for observer in self.observers:
            observer(event, fields)
