"""What a front end asks the runtime to run: one value, from the route to the store.

`Service.create` takes a `PredictionRequest`; the durable store keeps it (encoded by
`runtime/store/requests.py`) so that a prediction accepted but never started is made
again after a restart from the very same value. Front ends build it with keywords; every
field but the input has the default a plain `POST /predictions` gets.

Immutable, and a tuple: one is made per request, and a frozen dataclass's `__init__`
sets each of its nine fields through `object.__setattr__` (~2.5x the cost to make).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from cogserve.wire.protocol import Mode
from cogserve.wire.states import WebhookEvent


class PredictionRequest(NamedTuple):
    """A validated request to run the model once (a prediction, or a training)."""

    input: dict[str, Any]  # as the client sent it
    id: str | None = None  # None: the runtime makes one once the prediction has a place
    mode: Mode = Mode.PREDICT
    webhook: str | None = None
    webhook_events_filter: frozenset[WebhookEvent] | None = None  # None: every event
    output_file_prefix: str | None = None
    context: dict[str, str] | None = None  # the trace context the webhooks carry
    model_context: dict[str, str] | None = None  # the body's `context`, for the model
    timeout: float | None = None  # the request's own deadline, seconds (capped by the
    # server's --predict-timeout)

    @property
    def kind(self) -> str:
        """"prediction" or "training", as the prediction object says."""
        return "training" if self.mode is Mode.TRAIN else "prediction"
