"""OpenTelemetry tracing, used only when it is installed and asked for.

Tracing is on when the standard variables ask for it (OTEL_EXPORTER_OTLP_ENDPOINT,
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_TRACES_EXPORTER other than `none`) and the
SDK is importable (`pip install 'cogserve[otel]'`). Otherwise `configure` is never
called, nothing of OpenTelemetry is imported, and the helpers below hand back what
they were given: an outgoing request then carries the incoming `traceparent` as it
came, as Cog does.

Both processes use this module: the parent configures it at start, the worker on the
first prediction that arrives with a trace context (`protocol.TRACE` in its predict frame),
so a worker of a server without tracing never imports OpenTelemetry either.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
from collections.abc import Iterator
from typing import Any

from cogserve.envvars import env_text

_tracer: Any = None  # an opentelemetry Tracer once configured
_provider: Any = None


def wanted() -> bool:
    """Asked for by the environment and installed (checked without importing it)."""
    exporter = env_text("OTEL_TRACES_EXPORTER").lower()
    if exporter == "none" or env_text("OTEL_SDK_DISABLED").lower() == "true":
        return False
    if not (exporter or env_text("OTEL_EXPORTER_OTLP_ENDPOINT")
            or env_text("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        return False
    needed = ["opentelemetry.sdk"]
    if exporter in ("", "otlp"):
        needed.append("opentelemetry.exporter.otlp.proto.http")
    try:
        missing = [name for name in needed if importlib.util.find_spec(name) is None]
    except ModuleNotFoundError:  # a parent package is missing altogether
        missing = needed
    if missing:
        logging.getLogger("cogserve").warning(
            "OTEL_* variables ask for traces, but %s is not installed (pip install "
            "'cogserve[otel]'); tracing is off", missing[0])
        return False
    return True


def active() -> bool:
    return _tracer is not None


def configure(process: str) -> None:
    """Set up the tracer provider and exporter; `process` is "server" or "worker"."""
    global _tracer, _provider
    if _tracer is not None:
        return
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    attributes = {"cogserve.process": process}
    if not env_text("OTEL_SERVICE_NAME"):
        attributes["service.name"] = "cogserve"
    _provider = TracerProvider(resource=Resource.create(attributes))
    _provider.add_span_processor(BatchSpanProcessor(_exporter()))
    _tracer = _provider.get_tracer("cogserve")


def _exporter() -> Any:
    kind = env_text("OTEL_TRACES_EXPORTER", "otlp").lower()
    if kind == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    # OTLP over HTTP/protobuf: the exporter reads OTEL_EXPORTER_OTLP_* itself
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def flush() -> None:
    """Send what is buffered (a worker exits with os._exit, which skips atexit)."""
    if _provider is not None:
        _provider.force_flush(2000)


def tracer() -> Any:
    return _tracer


def extract(carrier: dict[str, str]) -> Any:
    """The trace context named by `traceparent`/`tracestate` in `carrier`."""
    from opentelemetry.propagate import extract as otel_extract

    return otel_extract(carrier)


def inject(span: Any) -> dict[str, str]:
    """`traceparent` (and `tracestate`) headers naming `span`."""
    from opentelemetry import trace
    from opentelemetry.propagate import inject as otel_inject

    carrier: dict[str, str] = {}
    otel_inject(carrier, context=trace.set_span_in_context(span))
    return carrier


@contextlib.contextmanager
def client_span(name: str, parent: dict[str, str], **attributes: Any
                ) -> Iterator[dict[str, str]]:
    """A span for an outgoing request (webhook, upload), child of the context `parent`
    names; yields the headers the request must carry. Off: yields `parent` itself."""
    if _tracer is None:
        yield parent
        return
    from opentelemetry.trace import SpanKind

    with _tracer.start_as_current_span(name, context=extract(parent), kind=SpanKind.CLIENT,
                                       attributes=attributes) as span:
        yield inject(span)


@contextlib.contextmanager
def child_span(name: str, **attributes: Any) -> Iterator[Any]:
    """A span under the current one (a download inside a worker's run span)."""
    if _tracer is None:
        yield None
        return
    with _tracer.start_as_current_span(name, attributes=attributes) as span:
        yield span
