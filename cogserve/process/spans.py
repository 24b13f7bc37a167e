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

cog.yaml `observability:` arrives as Cog's COG_TRACE_* variables (`config.trace_variables`):
`COG_TRACE_ENABLED=false` turns tracing off whatever OTEL_* say; the sampler is
`OTEL_TRACES_SAMPLER`, else cog.yaml's (`COG_TRACE_SAMPLER`, default
parentbased_always_off), else the SDK's default; an opted-in model with no collector
endpoint is told so once. `observability.config` (COG_OBSERVABILITY_CONFIG) is a file whose
`create_tracer_provider()` becomes the worker's global provider before the model is
imported (`install_custom`), with or without framework tracing, as in Cog.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
from collections.abc import Iterator
from typing import Any

from cogserve.exceptions import DefinitionError
from cogserve.process.envvars import env_switch, env_text

_tracer: Any = None  # an opentelemetry Tracer once configured
_provider: Any = None
_custom: Any = None  # the provider observability.config made (the worker's)


def wanted() -> bool:
    """Asked for by the environment and installed (checked without importing it)."""
    exporter = env_text("OTEL_TRACES_EXPORTER").lower()
    if exporter == "none" or env_text("OTEL_SDK_DISABLED").lower() == "true" \
            or not env_switch("COG_TRACE_ENABLED", True):
        return False
    if not (exporter or env_text("OTEL_EXPORTER_OTLP_ENDPOINT")
            or env_text("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        if env_switch("COG_TRACE_CONFIGURED", False):  # cog.yaml asked for traces
            logging.getLogger("cogserve").warning(
                "Tracing enabled without an OTLP endpoint; tracing disabled (set "
                "OTEL_EXPORTER_OTLP_ENDPOINT)")
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
    _provider = TracerProvider(resource=Resource.create(attributes), sampler=_sampler())
    _provider.add_span_processor(BatchSpanProcessor(_exporter()))
    _tracer = _provider.get_tracer("cogserve")
    if process == "worker" and _custom is None:
        from opentelemetry import trace

        # the model's own spans (trace.get_tracer) nest under its run span
        trace.set_tracer_provider(_provider)


def _sampler() -> Any:
    """OTEL_TRACES_SAMPLER, else cog.yaml's sampler; None: the SDK's default."""
    from opentelemetry.sdk.trace import sampling

    name = env_text("OTEL_TRACES_SAMPLER") or env_text("COG_TRACE_SAMPLER")
    if not name:
        return None
    fixed = {"always_on": sampling.ALWAYS_ON, "always_off": sampling.ALWAYS_OFF,
             "parentbased_always_on": sampling.DEFAULT_ON,
             "parentbased_always_off": sampling.DEFAULT_OFF}
    if name in fixed:
        return fixed[name]
    raw = env_text("OTEL_TRACES_SAMPLER_ARG") or env_text("COG_TRACE_SAMPLER_ARG") or "1"
    try:
        ratio = float(raw)
    except ValueError:
        raise DefinitionError(f"invalid sampler ratio {raw!r}") from None
    if name == "traceidratio":
        return sampling.TraceIdRatioBased(ratio)
    if name == "parentbased_traceidratio":
        return sampling.ParentBasedTraceIdRatio(ratio)
    raise DefinitionError(f"unsupported OpenTelemetry sampler {name!r}")


def install_custom(path: str) -> None:
    """observability.config: its `create_tracer_provider()` as the global provider, then
    its `configure_instrumentation()`; before the model is imported. Any failure fails
    setup, naming the file (Cog's rules)."""
    global _custom
    import importlib.util
    import sys

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    spec = importlib.util.spec_from_file_location("_cog_telemetry", path)
    if spec is None or spec.loader is None:
        raise DefinitionError(f"cannot load observability config from {path!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    factory = getattr(module, "create_tracer_provider", None)
    if not callable(factory):
        raise DefinitionError(f"{path}: telemetry.py must define create_tracer_provider()")
    provider = factory()
    if not isinstance(provider, TracerProvider):
        raise DefinitionError(f"{path}: telemetry.py create_tracer_provider() must return "
                              "TracerProvider")
    trace.set_tracer_provider(provider)
    _custom = provider
    instrument = getattr(module, "configure_instrumentation", None)
    if instrument is not None:
        if not callable(instrument):
            raise DefinitionError(f"{path}: telemetry.py configure_instrumentation must be "
                                  "callable")
        instrument()


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
    for provider in (_provider, _custom):
        if provider is not None:
            provider.force_flush(2000)


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
