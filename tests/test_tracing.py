"""OpenTelemetry traces: one request makes one span tree across the server and the
worker, exported over OTLP/HTTP to a real receiver the test runs; the webhook carries
the trace. Without the OTEL_* variables nothing of OpenTelemetry is imported."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from filehub import FileServer
from filehub import Receiver as Hub
from harness import Server, write_model
from otlp import OTLPReceiver, Span

MODEL = '''
import tempfile

from cog import BaseRunner, Path


class Runner(BaseRunner):
    def run(self, doc: Path) -> Path:
        out = Path(tempfile.mkdtemp()) / "out.txt"
        out.write_bytes(doc.read_bytes()[:10])
        return out
'''
ASYNC_MODEL = MODEL.replace("    def run(", "    async def run(")
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
SERVER_KIND, CLIENT_KIND = 2, 3  # opentelemetry.proto Span.SpanKind


@pytest.fixture
def otlp() -> Iterator[OTLPReceiver]:
    receiver = OTLPReceiver()
    yield receiver
    receiver.close()


@pytest.fixture
def files() -> Iterator[tuple[FileServer, Hub]]:
    server, hub = FileServer(), Hub()
    server.files["/doc.txt"] = (b"0123456789abcdef", "text/plain", None)
    yield server, hub
    server.close()
    hub.close()


@pytest.mark.parametrize("source", [MODEL, ASYNC_MODEL], ids=["sync", "async"])
def test_one_request_is_one_span_tree_across_both_processes_and_the_webhook(
        tmp_path: Path, otlp: OTLPReceiver, files: tuple[FileServer, Hub], receiver: Any,
        source: str) -> None:
    fileserver, hub = files
    hook = receiver()
    model = write_model(tmp_path / "traced", source)
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url, "OTEL_BSP_SCHEDULE_DELAY": "50"}
    with Server(model, env=env) as server:
        response = server.client.post("/predictions", headers={
            "traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"}, json={
            "input": {"doc": fileserver.url + "/doc.txt"},
            "output_file_prefix": hub.url + "/up/",
            "webhook": hook.url, "webhook_events_filter": ["completed"]})
        body = response.json()
        assert body["status"] == "succeeded", body
        delivered = hook.wait_for_terminal()
        names = {"POST /predictions", "prediction", "run", "download", "upload", "webhook"}
        spans = otlp.wait_for(lambda got: names <= {s.name for s in got})

    # health checks (the harness polls) are not traced: every span is of this request
    assert {s.name for s in spans} == names
    by_name: dict[str, Span] = {}
    for span in spans:
        assert span.trace_id == TRACE_ID, span  # everything continues the caller's trace
        assert span.name not in by_name, f"two {span.name!r} spans"
        by_name[span.name] = span
    request, prediction, run = by_name["POST /predictions"], by_name["prediction"], \
        by_name["run"]
    assert request.parent_id == CALLER_SPAN
    assert request.kind == SERVER_KIND
    assert request.attributes["http.route"] == "/predictions"
    assert request.attributes["http.response.status_code"] == 200
    assert prediction.parent_id == request.span_id
    assert prediction.attributes["cog.prediction.id"] == body["id"]
    assert prediction.attributes["cog.prediction.status"] == "succeeded"
    assert prediction.attributes["cog.model"] == "traced"
    # the worker's span, sent by the worker process, continues the parent's prediction span
    assert run.parent_id == prediction.span_id
    assert run.resource["cogserve.process"] == "worker"
    assert prediction.resource["cogserve.process"] == "server"
    assert run.attributes["cog.prediction.status"] == "succeeded"
    assert by_name["download"].parent_id == run.span_id
    assert by_name["download"].resource["cogserve.process"] == "worker"
    for outgoing in ("upload", "webhook"):
        assert by_name[outgoing].parent_id == prediction.span_id
        assert by_name[outgoing].kind == CLIENT_KIND
    # the webhook request carried its own span's context, in the caller's trace
    traceparent = hook.hits[-1].headers["traceparent"]
    assert traceparent == f"00-{TRACE_ID}-{by_name['webhook'].span_id}-01"
    assert delivered[-1]["id"] == body["id"]


def test_without_otel_variables_nothing_of_opentelemetry_is_imported(tmp_path: Path) -> None:
    model = write_model(tmp_path / "plain", MODEL)
    script = (
        "import sys\n"
        "from cogserve.model.config import load_config\n"
        "from cogserve.assembly import build\n"
        "from cogserve.runtime.settings import Settings\n"
        f"config = load_config({str(model)!r})\n"
        "app, service, _ = build(config, Settings.from_env(config))\n"
        "service.remove_folders()\n"
        "assert app.handle.tracing is None\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
