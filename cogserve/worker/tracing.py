"""The worker's span around one prediction, child of the parent's prediction span.

Imported only for a predict frame that carries a trace context (`protocol.TRACE`), which the
parent adds only when tracing is on: a worker of an untraced server never loads it.
"""

from __future__ import annotations

from typing import Any

from cogserve.process import spans
from cogserve.wire.protocol import KIND, FromWorker
from cogserve.wire.states import Status as PredictionStatus


def open_span(prediction_id: str, carrier: dict[str, str]) -> tuple[Any, Any]:
    """Start the span and make it current (file downloads become its children)."""
    spans.configure("worker")
    from opentelemetry import context, trace

    span = spans.tracer().start_span("run", context=spans.extract(carrier),
                                     attributes={"cog.prediction.id": prediction_id})
    return span, context.attach(trace.set_span_in_context(span))


def finish(span: Any, frame: dict[str, Any]) -> None:
    """End it with the outcome the terminal frame reports."""
    from opentelemetry.trace import Status, StatusCode

    status = {FromWorker.DONE: PredictionStatus.SUCCEEDED,
              FromWorker.FAILED: PredictionStatus.FAILED}.get(frame[KIND],
                                                              PredictionStatus.CANCELED)
    span.set_attribute("cog.prediction.status", status.value)
    if status is PredictionStatus.FAILED:
        span.set_status(Status(StatusCode.ERROR, str(frame.get("error", ""))[:200]))
    span.end()


def detach(token: Any) -> None:
    from opentelemetry import context

    context.detach(token)
