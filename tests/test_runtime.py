"""The runtime end to end: a real `cogserve serve` process, real HTTP, real signals."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import threading
import time

import httpx
import pytest
from harness import MODELS, write_model


def test_sync_prediction_envelope_and_logs(serve):
    server = serve("sleepy")
    r = server.predict(text="abc")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "succeeded"
    assert body["output"] == "ABC"
    assert body["input"] == {"text": "abc"}
    assert body["error"] is None
    assert "start abc\n" in body["logs"]
    assert "to stderr abc\n" in body["logs"]
    assert "from-child abc\n" in body["logs"]  # a child process writing to fd 1
    assert body["metrics"]["predict_time"] > 0
    for key in ("created_at", "started_at", "completed_at"):
        assert body[key].endswith("+00:00")
    assert len(body["id"]) == 26
    health = server.health()
    assert health["status"] == "READY"
    assert health["setup"]["status"] == "succeeded"
    assert "setting up sleepy" in health["setup"]["logs"]


def test_failing_run_gives_200_failed_with_traceback_and_keeps_serving(serve):
    server = serve("sleepy")
    body = server.predict(text="x", fail=True).json()
    assert body["status"] == "failed"
    assert body["error"] == "Prediction failed: Prediction failed: ValueError: boom x"  # Cog's
    assert "Traceback" in body["logs"] and "ValueError: boom x" in body["logs"]
    assert server.predict(text="y").json()["output"] == "Y"


def test_validation_errors_are_422_all_at_once_and_take_no_slot(serve):
    server = serve("sleepy")
    r = server.client.post("/predictions", json={"input": {"sleep": -1, "crash": "nope",
                                                           "bogus": 1, "text": None}})
    assert r.status_code == 422
    detail = r.json()["detail"]
    by_field = {d["loc"][-1]: d["msg"] for d in detail}
    assert by_field["sleep"] == "-1 is less than the minimum of 0"
    assert by_field["crash"] == '"nope" is not one of ["","segfault","exit","kill"]'
    assert "bogus" in by_field["bogus"]
    assert by_field["text"] == 'null is not of type "string"'
    r = server.predict(text="ok")  # nothing was taken by the refused request
    assert r.status_code == 200 and r.json()["output"] == "OK"


def test_malformed_bodies(serve):
    server = serve("sleepy")
    as_json = {"content-type": "application/json"}
    r = server.client.post("/predictions", content=b'{"input":', headers=as_json)
    assert r.status_code == 400 and r.headers["content-type"] == "text/plain; charset=utf-8"
    assert r.text.startswith("Failed to parse the request body as JSON: ")
    r = server.client.post("/predictions", content=b"[1,2]", headers=as_json)
    assert r.status_code == 422
    assert r.text.startswith("Failed to deserialize the JSON body into the target type: ")
    r = server.client.post("/predictions", content=b"{}", headers={"content-type": "text/plain"})
    assert r.status_code == 415
    assert r.text == "Expected request with `Content-Type: application/json`"
    r = server.client.post("/predictions", content=b'{"input":{"sleep":-1}}')
    assert r.status_code == 200, "without a Content-Type the body is not read, as by coglet"
    r = server.client.get("/nowhere")
    assert r.status_code == 404 and r.content == b"" and "content-type" not in r.headers
    r = server.client.delete("/predictions")  # GET lists them (an addition to Cog's API)
    assert r.status_code == 405 and r.headers["allow"] == "GET,HEAD,POST"
    r = server.client.delete("/predictions/abc")
    assert r.status_code == 405


def test_body_over_limit_is_413(serve):
    server = serve("sleepy", "--max-body-bytes", "1000")
    r = server.client.post("/predictions", json={"input": {"text": "x" * 2000}})
    assert r.status_code == 413
    assert "limit" in r.json()["error"]
    r = server.predict(text="small")
    assert r.status_code == 200 and r.json()["output"] == "SMALL"


def test_body_over_limit_without_a_length_is_413(serve):
    # chunked: no Content-Length to refuse it by, and the whole body in the server's
    # first read (it was let through whole before)
    server = serve("sleepy", "--max-body-bytes", "1000")
    body = json.dumps({"input": {"text": "x" * 2000}}).encode()
    r = server.client.post("/predictions", content=iter([body]),
                           headers={"Content-Type": "application/json"})
    assert r.request.headers.get("transfer-encoding") == "chunked"
    assert r.status_code == 413
    assert r.json()["error"] == "Request body exceeds the limit of 1000 bytes"
    r = server.predict(text="small")
    assert r.status_code == 200 and r.json()["output"] == "SMALL"


def test_sequential_client_never_sees_409(serve):
    server = serve("sleepy")
    codes = [server.predict(text=str(i)).status_code for i in range(200)]
    assert codes == [200] * 200


def test_busy_slot_gives_409_at_once(serve):
    server = serve("sleepy")
    results = {}

    def slow():  # holds the slot until the test cancels it: no race with a timer
        results["slow"] = server.client.post("/predictions", json={
            "id": "slow", "input": {"sleep": 60}})

    thread = threading.Thread(target=slow)
    thread.start()
    server.wait_for("BUSY", timeout=10)
    # a queued request would wait the 60 s out; a refusal comes at once
    r = httpx.post(server.url + "/predictions", json={"input": {}}, timeout=20)
    assert r.status_code == 409
    assert r.json()["error"] == "At capacity - all prediction slots busy"
    assert server.client.post("/predictions/slow/cancel").status_code == 200
    thread.join(timeout=30)
    assert results["slow"].json()["status"] == "canceled"
    server.wait_for("READY")
    assert server.predict(text="after").json()["output"] == "AFTER"


def test_four_slots_run_concurrently_with_their_own_logs(serve):
    server = serve("async_slots")
    results = {}

    def call(i):
        results[i] = httpx.post(server.url + "/predictions",
                                json={"input": {"text": f"p{i}", "sleep": 0.5}}, timeout=30)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        body = results[i].json()
        assert body["status"] == "succeeded", body
        assert body["logs"] == f"begin p{i}\nfinish p{i}\n"
    # with the four slots held (until cancelled), a fifth one is refused
    for i in range(4, 8):
        r = server.client.post("/predictions", headers={"Prefer": "respond-async"},
                               json={"id": f"held{i}", "input": {"text": f"p{i}", "sleep": 60}})
        assert r.status_code == 202
    server.wait_for("BUSY")
    r = server.client.post("/predictions", json={"input": {"text": "fifth"}})
    assert r.status_code == 409
    for i in range(4, 8):
        assert server.client.post(f"/predictions/held{i}/cancel").status_code == 200
    server.wait_for("READY")
    assert server.predict(text="after").json()["output"] == "after"


@pytest.mark.parametrize("crash,signame", [("segfault", "SIGSEGV"), ("exit", "status 3"),
                                           ("kill", "SIGKILL")])
def test_worker_death_fails_prediction_and_turns_defunct(serve, crash, signame):
    server = serve("sleepy")
    body = server.predict(crash=crash).json()
    assert body["status"] == "failed"
    assert signame in body["error"]
    health = server.wait_for("DEFUNCT")
    assert health["status"] == "DEFUNCT"
    r = server.predict()
    assert r.status_code == 503
    assert "defunct" in r.json()["error"]
    assert server.client.get("/health-check").status_code == 200


def test_worker_sigkill_from_outside_mid_prediction(serve):
    server = serve("sleepy")
    results = {}
    thread = threading.Thread(target=lambda: results.setdefault(
        "r", server.client.post("/predictions", json={"input": {"sleep": 30}})))
    thread.start()
    server.wait_for("BUSY")
    [worker] = server.worker_pids()
    os.kill(worker, signal.SIGKILL)
    thread.join(timeout=20)
    body = results["r"].json()
    assert body["status"] == "failed"
    assert "SIGKILL" in body["error"]
    assert server.wait_for("DEFUNCT")["status"] == "DEFUNCT"


def test_setup_failure(serve):
    server = serve("setup_fails", wait="SETUP_FAILED")
    health = server.health()
    assert health["setup"]["status"] == "failed"
    assert "about to fail" in health["setup"]["logs"]
    assert "RuntimeError: setup exploded" in health["setup"]["logs"]
    r = server.predict()
    assert r.status_code == 503


def test_setup_timeout(serve):
    server = serve("slow_setup", env={"COG_SETUP_TIMEOUT": "1"}, wait="SETUP_FAILED")
    health = server.health()
    assert "did not finish within 1 seconds" in health["setup"]["logs"]
    assert "slow setup begins" in health["setup"]["logs"]


def test_starting_returns_503(serve):
    server = serve("slow_setup", wait="STARTING")
    r = server.predict()
    assert r.status_code == 503
    assert r.json()["error"].startswith("Setup has not finished yet")


@pytest.mark.parametrize("mode,expected", [  # the reference's texts, exactly
    ("false", "Healthcheck failed: user-defined healthcheck returned False"),
    ("raise", "Healthcheck failed: RuntimeError: health probe broke"),
    ("hang", "Healthcheck failed: user-defined healthcheck timed out after 1.0 seconds"),
])
def test_user_healthcheck_unhealthy(serve, tmp_path, mode, expected):
    model = tmp_path / "m"
    shutil.copytree(MODELS / "unhealthy", model)
    server = serve(model, env={"COGSERVE_HEALTHCHECK_TIMEOUT": "1"})
    (model / "mode").write_text(mode)
    health = server.health()
    assert health["status"] == "UNHEALTHY"
    assert health["user_healthcheck_error"] == expected
    assert server.predict().json()["output"] == "ok"
    (model / "mode").write_text("ok")
    assert server.health()["status"] == "READY"


GATED = """
import os, time
from cog import BaseRunner

class Runner(BaseRunner):
    def run(self, text: str, gate: str) -> str:
        while not os.path.exists(gate):  # the prediction ends when the test says
            time.sleep(0.01)
        return text.upper()
"""


def _send_put(port: int, path: str, body: dict) -> http.client.HTTPConnection:
    """Send a PUT now (the bytes are with the server when this returns); read it later."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("PUT", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    return conn


def test_put_is_idempotent(serve, tmp_path):
    server = serve(write_model(tmp_path / "gated", GATED))
    gate = tmp_path / "gate"
    first = _send_put(server.port, "/predictions/same-id",
                      {"input": {"text": "one", "gate": str(gate)}})
    server.wait_for("BUSY")
    # a sync retry and an async one, both while the first is held by the gate
    again = _send_put(server.port, "/predictions/same-id",
                      {"input": {"text": "two", "gate": str(gate)}})
    now = server.client.put("/predictions/same-id", headers={"Prefer": "respond-async"},
                            json={"input": {"text": "three", "gate": str(gate)}})
    assert now.status_code == 202
    assert now.json()["status"] in ("starting", "processing")  # not finished
    assert now.json()["input"]["text"] == "one"  # the running one, not the retry's
    gate.touch()
    try:
        one, two = first.getresponse(), again.getresponse()
        assert one.status == 200 and two.status == 200
        one_body, two_body = json.loads(one.read()), json.loads(two.read())
    finally:
        first.close()
        again.close()
    assert one_body["output"] == "ONE"
    assert two_body["id"] == "same-id"
    assert two_body["output"] == "ONE"  # the retry waited for the same prediction
    mismatch = server.client.put("/predictions/a", json={"id": "b", "input": {}})
    assert mismatch.status_code == 422
    assert mismatch.json()["detail"][0]["loc"] == ["body", "id"]


def test_client_disconnect_cancels_sync_prediction(serve):
    server = serve("sleepy")
    sock = socket.create_connection(("127.0.0.1", server.port))
    body = b'{"input":{"text":"gone","sleep":30}}'
    sock.sendall(b"POST /predictions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    server.wait_for("BUSY")
    sock.close()
    server.wait_for("READY", timeout=10)
    assert server.predict(text="next").json()["output"] == "NEXT"


def test_sigterm_finishes_in_flight_work_then_exits_zero(serve):
    server = serve("sleepy")
    results = {}
    thread = threading.Thread(target=lambda: results.setdefault(
        "r", server.client.post("/predictions", json={"input": {"text": "t", "sleep": 1}})))
    thread.start()
    server.wait_for("BUSY")
    os.kill(server.pid, signal.SIGTERM)
    thread.join()
    assert results["r"].json()["output"] == "T"
    assert server.process.wait(timeout=15) == 0


def test_await_explicit_shutdown_ignores_sigterm(serve):
    server = serve("sleepy", "--await-explicit-shutdown")
    os.kill(server.pid, signal.SIGTERM)
    # the server has handled the signal once it says so; it must still take work
    deadline = time.monotonic() + 30
    while "SIGTERM ignored" not in server.output() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "SIGTERM ignored" in server.output()
    assert server.predict(text="still").json()["output"] == "STILL"
    assert server.process.poll() is None
    assert server.client.post("/shutdown").status_code == 200
    assert server.process.wait(timeout=15) == 0
    assert server.worker_pids() == []


def test_discovery_and_openapi(serve):
    server = serve("sleepy")
    root = server.client.get("/").json()
    assert root["predictions_url"] == "/predictions"
    assert "trainings_url" not in root
    doc = server.client.get("/openapi.json").json()
    props = doc["components"]["schemas"]["Input"]["properties"]
    assert list(props) == ["text", "sleep", "busy", "fail", "crash", "swallow"]
    assert "PredictionResponse" in doc["components"]["schemas"]
    assert "/predictions/{prediction_id}" in doc["paths"]
