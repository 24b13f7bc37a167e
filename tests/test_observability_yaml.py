"""cog.yaml `observability:` (Cog 0.23): the sampler, the operator's trace header, the
caller's `trace.*` context tags and a `telemetry.py` provider, as Cog's
docs/observability.md describes them, exported to a real OTLP receiver."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_harness import cogserve
from harness import Server, write_model
from otlp import OTLPReceiver

MODEL = '''
from cog import BaseRunner


class Runner(BaseRunner):
    def run(self, s: str = "x") -> str:
        return s
'''
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.fixture
def otlp() -> Iterator[OTLPReceiver]:
    receiver = OTLPReceiver()
    yield receiver
    receiver.close()


def _model(tmp: Path, traces: str) -> Path:
    return write_model(tmp / "model", MODEL,
                       f'run: "run.py:Runner"\nobservability:\n  traces:\n{traces}')


def _env(otlp: OTLPReceiver) -> dict[str, str]:
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url, "OTEL_BSP_SCHEDULE_DELAY": "50"}


def test_caller_trace_tags_become_bounded_caller_attributes(tmp_path, otlp) -> None:
    model = _model(tmp_path, "    enabled: true\n    sampler: always_on\n")
    context = {f"trace.tag{n:02d}": f"v{n}" for n in range(20)}  # 16 are exported
    context.update({"trace.aa.long": "é" * 100, "trace.bad key": "dropped",
                    "ordinary.secret": "not exported"})
    with Server(model, env=_env(otlp)) as server:
        response = server.client.post("/predictions", json={"input": {}, "context": context})
        assert response.json()["status"] == "succeeded", response.text
        spans = otlp.wait_for(lambda got: {"prediction", "run", "POST /predictions"}
                              <= {s.name for s in got})
    prediction = next(s for s in spans if s.name == "prediction")
    caller = {k: v for k, v in prediction.attributes.items() if k.startswith("caller.")}
    assert len(caller) == 16
    assert caller["caller.aa.long"] == "é" * 64  # 128 bytes, cut between characters
    assert "caller.tag00" in caller and "caller.bad key" not in caller
    assert not any("secret" in k for k in prediction.attributes)
    others = [s for s in spans if s.name != "prediction"]
    assert others and not any(k.startswith("caller.") for s in others for k in s.attributes)


def test_the_default_sampler_continues_sampled_callers_and_starts_nothing(tmp_path, otlp
                                                                          ) -> None:
    model = _model(tmp_path, "    enabled: true\n")  # parentbased_always_off
    with Server(model, env=_env(otlp)) as server:
        alone = server.client.post("/predictions", json={"input": {"s": "alone"}})
        assert alone.status_code == 200, alone.text
        joined = server.client.post("/predictions", json={"input": {"s": "joined"}},
                                    headers={"traceparent": f"00-{TRACE_ID}-"
                                                            "00f067aa0ba902b7-01"})
        assert joined.status_code == 200, joined.text
        spans = otlp.wait_for(lambda got: {"prediction", "run"} <= {s.name for s in got})
    assert {s.trace_id for s in spans} == {TRACE_ID}  # the request without a parent: none


def test_the_operators_jaeger_header_continues_the_callers_trace(tmp_path, otlp) -> None:
    model = _model(tmp_path, "    enabled: true\n    trace_header: x-company-trace\n"
                             "    trace_header_format: jaeger\n")
    with Server(model, env=_env(otlp)) as server:
        response = server.client.post("/predictions", json={"input": {}}, headers={
            "x-company-trace": f"{TRACE_ID}:00f067aa0ba902b7:0:1"})
        assert response.status_code == 200, response.text
        malformed = server.client.post("/predictions", json={"input": {}},
                                       headers={"x-company-trace": "nonsense"})
        assert malformed.status_code == 200  # ignored, never a refusal
        spans = otlp.wait_for(lambda got: {"run", "POST /predictions"}
                              <= {s.name for s in got})
    request = next(s for s in spans if s.name == "POST /predictions")
    assert request.trace_id == TRACE_ID and request.parent_id == "00f067aa0ba902b7"


TELEMETRY = '''
import os

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider


class CustomProvider(TracerProvider):
    pass


def create_tracer_provider() -> TracerProvider:
    return CustomProvider(shutdown_on_exit=False)


def configure_instrumentation() -> None:
    assert isinstance(trace.get_tracer_provider(), CustomProvider)
    os.environ["TELEMETRY_CONFIGURED"] = "true"
'''
TRACED_MODEL = '''
import os

from opentelemetry import trace

from cog import BaseRunner

assert os.environ["TELEMETRY_CONFIGURED"] == "true"


class Runner(BaseRunner):
    def run(self, value: str) -> str:
        provider_name = type(trace.get_tracer_provider()).__name__
        with trace.get_tracer(__name__).start_as_current_span("model.run"):
            return f"{value} from {provider_name}"
'''


def test_telemetry_py_provider_is_installed_before_the_model_is_imported(tmp_path) -> None:
    """Cog's observability_config script: no collector, OTEL_TRACES_EXPORTER=none."""
    model = write_model(tmp_path / "m", TRACED_MODEL, 'run: "run.py:Runner"\nobservability:\n'
                        "  config: telemetry.py\n  traces:\n    enabled: true\n")
    (model / "telemetry.py").write_text(TELEMETRY)
    result = cogserve("predict", model, "-i", "value=hello",
                      env={"OTEL_TRACES_EXPORTER": "none"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "hello from CustomProvider"
    (model / "telemetry.py").write_text("def create_tracer_provider():\n    return 1\n")
    broken = cogserve("predict", model, "-i", "value=hello")
    assert broken.returncode == 1
    assert "create_tracer_provider() must return TracerProvider" in broken.stderr


@pytest.mark.parametrize(("traces", "message"), [
    ("    enabled: true\n    sampler_arg: '0.5'\n", "sampler_arg is only valid for ratio"),
    ("    enabled: true\n    sampler: traceidratio\n", "sampler_arg is required for ratio"),
    ("    enabled: true\n    sampler: sometimes\n", "must be a supported OpenTelemetry"),
    ("    enabled: true\n    trace_header: traceparent\n", "non-reserved HTTP header"),
    ("    sampler: always_on\n", "traces.enabled is required"),
])
def test_a_bad_section_is_refused_naming_the_key(tmp_path, traces: str, message: str) -> None:
    result = cogserve("predict", _model(tmp_path, traces))
    assert result.returncode == 1
    assert message in result.stderr
