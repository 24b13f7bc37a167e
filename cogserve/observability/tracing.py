"""The parent's spans: one per HTTP request, and a child per prediction.

Imported only when tracing is on (`spans.wanted()`). The request span continues an
incoming `traceparent`; a prediction span starts inside it (the route calls
`Service.create` in the request's context) and ends when the prediction does. Its
context is what leaves the process: in the predict frame (`protocol.TRACE`, continued by the
worker's `run` span) and in the prediction's `context`, which webhook deliveries and
uploads send on as their parent.

As in Cog (cog.yaml `observability.traces`): a request without a valid `traceparent` may
be continued from the operator's own header (`COG_TRACE_HEADER`, W3C or Jaeger format);
the caller's `trace.*` context entries become `caller.*` attributes of the prediction span.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from cogserve.http.asgi import Scope
from cogserve.http.responses import header
from cogserve.observability.propagation import (
    caller_attributes,
    from_custom_header,
    valid_traceparent,
)
from cogserve.process import spans
from cogserve.process.envvars import env_text
from cogserve.runtime.events import RuntimeEvent
from cogserve.wire import protocol
from cogserve.wire.states import Status as PredictionStatus

if TYPE_CHECKING:
    from cogserve.runtime.prediction import Prediction
    from cogserve.runtime.service import Service


class Tracing:
    EVENTS = (RuntimeEvent.PREDICTION_CREATED, RuntimeEvent.PREDICTION_COMPLETED,
              RuntimeEvent.PREDICTION_REFUSED)  # what `on_event` handles

    def __init__(self, service: Service) -> None:
        spans.configure("server")
        self.tracer = spans.tracer()
        self.model = service.settings.model_name or service.config.directory.name
        self.open: dict[int, Any] = {}  # id(prediction) -> its span, while it runs
        self.custom_header = env_text("COG_TRACE_HEADER").lower().encode()
        self.custom_format = env_text("COG_TRACE_HEADER_FORMAT", "w3c").lower()
        service.events.subscribe(self.on_event, self.EVENTS)

    # ------------------------------------------------------------ requests

    def start_request(self, scope: Scope) -> tuple[Any, Any, str]:
        carrier = {k: v for k in ("traceparent", "tracestate")
                   if (v := header(scope, k.encode())) is not None}
        if self.custom_header and not valid_traceparent(carrier.get("traceparent")):
            value = header(scope, self.custom_header)
            converted = from_custom_header(value, self.custom_format) if value else None
            carrier = {"traceparent": converted} if converted else {}
        parent = spans.extract(carrier)
        method = scope["method"]
        span = self.tracer.start_span(method, context=parent, kind=SpanKind.SERVER, attributes={
            "http.request.method": method, "url.path": scope["path"]})
        return span, otel_context.attach(trace.set_span_in_context(span, parent)), method

    def end_request(self, handle: tuple[Any, Any, str], route: str, status: int) -> None:
        span, token, method = handle  # an unsampled span is a NonRecordingSpan: no .name
        span.update_name(f"{method} {route}")
        span.set_attribute("http.route", route)
        span.set_attribute("http.response.status_code", status)
        if status >= 500:
            span.set_status(Status(StatusCode.ERROR))
        span.end()
        otel_context.detach(token)

    # ------------------------------------------------------------ predictions

    def on_event(self, event: RuntimeEvent, fields: dict[str, Any]) -> None:
        if event is RuntimeEvent.PREDICTION_CREATED:
            self._created(fields["prediction"], fields["message"])
        elif event is RuntimeEvent.PREDICTION_COMPLETED:
            self._completed(fields["prediction"])
        elif event is RuntimeEvent.PREDICTION_REFUSED:
            span = self.open.pop(id(fields["prediction"]), None)
            if span is not None:
                span.set_status(Status(StatusCode.ERROR, "input refused"))
                span.end()

    def _created(self, prediction: Prediction, message: dict[str, Any]) -> None:
        span = self.tracer.start_span(prediction.kind, attributes={
            "cog.prediction.id": prediction.id, "cog.model": self.model,
            **caller_attributes(message.get("context") or {})})  # the request's context
        self.open[id(prediction)] = span
        carrier = spans.inject(span)
        protocol.add_trace(message, carrier)
        # webhooks and uploads of this prediction go out as its children
        prediction.context = {**prediction.context, **carrier}

    def _completed(self, prediction: Prediction) -> None:
        span = self.open.pop(id(prediction), None)
        if span is None:
            return
        span.set_attribute("cog.prediction.status", prediction.status)
        if prediction.status is PredictionStatus.FAILED:
            span.set_status(Status(StatusCode.ERROR, (prediction.error or "")[:200]))
        span.end()
