"""SageMaker's and Vertex AI's container contracts, called as the platforms call them: the
paths, methods, headers and bodies their documentation gives (SageMaker: `docker run
IMAGE serve`, GET /ping, POST /invocations with the caller's ContentType and Accept, on
port 8080; Vertex AI: AIP_HTTP_PORT, AIP_HEALTH_ROUTE, AIP_PREDICT_ROUTE and
`{"instances": [...], "parameters": {...}}` -> `{"predictions": [...]}`)."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest
from harness import MODELS, Server, free_port, write_model
from test_durable import until

GATED_SETUP = '''
import os, time
from cog import BaseRunner

class Runner(BaseRunner):
    def setup(self) -> None:
        deadline = time.monotonic() + 60
        while not os.path.exists(os.environ["SETUP_GATE"]) and time.monotonic() < deadline:
            time.sleep(0.01)

    def run(self, text: str, times: int = 1) -> str:
        return text * times
'''

VERTEX_HEALTH = "/v1/endpoints/123/deployedModels/456"
VERTEX_PREDICT = "/v1/endpoints/123/deployedModels/456:predict"
SAGEMAKER_HEADERS = {"Content-Type": "application/json", "Accept": "application/json",
                     "X-Amzn-SageMaker-Custom-Attributes": "trace=1"}


def _until(check):
    return until(check, "the condition")


def test_sagemaker_ping_is_503_until_setup_ends_then_invocations_predict(serve, tmp_path):
    model = write_model(tmp_path / "m", GATED_SETUP)
    gate = tmp_path / "gate"
    server = serve(model, "--sagemaker", wait=None, env={"SETUP_GATE": str(gate)})
    ping = _until(lambda: _get(server, "/ping"))
    assert ping.status_code == 503
    r = server.client.post("/invocations", content=b'{"text": "a"}', headers=SAGEMAKER_HEADERS)
    assert r.status_code == 503 and "error" in r.json()
    gate.touch()
    _until(lambda: server.client.get("/ping").status_code == 200)
    r = server.client.post("/invocations", content=json.dumps({"text": "ab", "times": 2}),
                           headers=SAGEMAKER_HEADERS)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json"
    assert r.json() == "abab"
    # Cog's own routes are still there
    assert server.client.post("/predictions", json={"input": {"text": "c"}}).json()["output"] == "c"


def _get(server: Server, path: str) -> httpx.Response | None:
    try:
        return server.client.get(path)
    except httpx.TransportError:
        return None  # not listening yet


def test_sagemaker_refusals_are_json_errors(serve):
    server = serve("sleepy", "--sagemaker")
    post = server.client.post
    r = post("/invocations", content=b"text=a", headers={"Content-Type": "text/csv"})
    assert r.status_code == 415 and "text/csv" in r.json()["error"]
    r = post("/invocations", content=b"{}", headers={**SAGEMAKER_HEADERS, "Accept": "image/png"})
    assert r.status_code == 406 and "image/png" in r.json()["error"]
    r = post("/invocations", content=b"{not json", headers=SAGEMAKER_HEADERS)
    assert r.status_code == 400 and "not JSON" in r.json()["error"]
    r = post("/invocations", content=b"[1]", headers=SAGEMAKER_HEADERS)
    assert r.status_code == 422
    r = post("/invocations", content=b'{"nope": 1}', headers=SAGEMAKER_HEADERS)
    assert r.status_code == 422 and "nope" in r.json()["error"]
    r = post("/invocations", content=b'{"text": "x", "fail": true}', headers=SAGEMAKER_HEADERS)
    assert r.status_code == 500 and "failed" in r.json()["error"]
    assert server.client.get("/invocations").status_code == 405
    # the server goes on serving; a body without ContentType is read as JSON
    r = post("/invocations", content=b'{"text": "ok"}')
    assert r.status_code == 200 and r.json() == "OK"


def test_the_images_serve_argument_is_sagemaker(tmp_path):
    """What `docker run IMAGE serve` runs: the image's entrypoint `cogserve serve DIR`, then
    `serve` (-p here: 8080, the default, may be taken on a shared machine)."""
    port = free_port()
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "cogserve.cli", "serve", str(MODELS / "sleepy"), "serve",
             "-p", str(port), "--host", "127.0.0.1"], stdout=out, stderr=subprocess.STDOUT)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            _until(lambda: (r := _get_client(client, "/ping")) is not None
                   and r.status_code == 200)
            assert client.post("/invocations", json={"text": "img"}).json() == "IMG"
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0, log.read_text()


def _get_client(client: httpx.Client, path: str) -> httpx.Response | None:
    try:
        return client.get(path)
    except httpx.TransportError:
        return None


@pytest.mark.parametrize("argv, env, port", [
    (["serve"], {}, 8080),
    (["--sagemaker"], {}, 8080),
    (["--sagemaker", "-p", "9999"], {}, 9999),
    ([], {"PORT": "7000"}, 7000),
    ([], {"AIP_HTTP_PORT": "8123", "AIP_HEALTH_ROUTE": "/h", "AIP_PREDICT_ROUTE": "/p"}, 8123),
    (["-p", "9999"], {"AIP_HTTP_PORT": "8123", "AIP_HEALTH_ROUTE": "/h",
                      "AIP_PREDICT_ROUTE": "/p"}, 9999),
])
def test_the_port_each_contract_listens_on(monkeypatch, argv, env, port):
    from cogserve.cli import main as cli

    for name in ("PORT", "AIP_HTTP_PORT", "AIP_HEALTH_ROUTE", "AIP_PREDICT_ROUTE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    seen = []
    monkeypatch.setattr(cli, "_serve", lambda args: seen.append(args.port))
    cli.main(["serve", str(MODELS / "sleepy"), *argv])
    assert seen == [port]


@pytest.fixture
def vertex_env(tmp_path):
    port = free_port()
    return port, {"AIP_HTTP_PORT": str(port), "AIP_HEALTH_ROUTE": VERTEX_HEALTH,
                  "AIP_PREDICT_ROUTE": VERTEX_PREDICT, "AIP_MODE": "PREDICTION",
                  "BATCH_LOG": str(tmp_path / "batches.jsonl")}


def test_vertex_health_and_predictions_batched_together(serve, vertex_env, tmp_path):
    port, env = vertex_env
    server = serve("batched", env=env, port=port)
    assert server.client.get(VERTEX_HEALTH).status_code == 200
    body = {"instances": [{"text": "a"}, {"text": "b"}, {"text": "c"}],
            "parameters": {"fail": ""}}
    r = server.client.post(VERTEX_PREDICT, json=body)
    assert r.status_code == 200, r.text
    assert r.json() == {"predictions": ["A", "B", "C"]}
    batches = [json.loads(line)["texts"] for line in
               (tmp_path / "batches.jsonl").read_text().splitlines()]
    assert sorted(t for b in batches for t in b) == ["a", "b", "c"]
    assert len(batches) < 3, batches  # made at once: @batch ran them together
    # refusals: a bad instance names its place; none of the request runs
    r = server.client.post(VERTEX_PREDICT, json={"instances": [{"text": "a"}, {"txt": "b"}]})
    assert r.status_code == 422 and r.json()["error"].startswith("instance 1:")
    r = server.client.post(VERTEX_PREDICT, json={"instances": {"text": "a"}})
    assert r.status_code == 400 and "instances" in r.json()["error"]
    r = server.client.post(VERTEX_PREDICT, json={"instances": [{"text": "a"}],
                                                  "parameters": {"fail": "item"}})
    assert r.status_code == 500 and r.json()["error"].startswith("instance 0:")


def test_vertex_health_is_503_before_setup_ends(serve, tmp_path, vertex_env):
    port, env = vertex_env
    model = write_model(tmp_path / "m", GATED_SETUP)
    gate = tmp_path / "gate"
    server = serve(model, env={**env, "SETUP_GATE": str(gate)}, port=port, wait=None)
    health = _until(lambda: _get(server, VERTEX_HEALTH))
    assert health.status_code == 503
    r = server.client.post(VERTEX_PREDICT, json={"instances": [{"text": "a"}]})
    assert r.status_code == 503
    gate.touch()
    _until(lambda: server.client.get(VERTEX_HEALTH).status_code == 200)
    r = server.client.post(VERTEX_PREDICT, json={"instances": [{"text": "x"}, {"text": "y"}],
                                                  "parameters": {"times": 3}})
    assert r.json() == {"predictions": ["xxx", "yyy"]}
