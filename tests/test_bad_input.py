"""A hostile client and a badly behaved model: every mistake gets a precise message and
the right status, the server keeps serving, and nothing is left behind."""

from __future__ import annotations

import ctypes
import os
import pathlib
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
from harness import MODELS

HELLO = MODELS.parent.parent / "examples" / "hello-world"


def _alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting for its reaper counts as ended)."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("body,status,phrase", [
    (b'{"input":{"name":"\xff\xfe"}}', 400, "not valid UTF-8"),
    (b'{"input":{"name":"\\ud800"}}', 400, "surrogate"),
    (b'{"input":{"times":NaN}}', 400, "Failed to parse the request body as JSON"),
    (b'{"input":{"times":1e400}}', 400, "infinity"),
    (b'{"input":{"name":' + b"[" * 100_000 + b"]" * 100_000 + b"}}", 400, "depth"),
    # over 1 MiB: the other JSON parser, which ran into RecursionError (a 500)
    (b'{"input":{"name":' + b"[" * 600_000 + b"]" * 600_000 + b"}}", 400, "nested too deeply"),
    # parsed fine but the wrong type: showing the value recursed (a 500)
    (b'{"input":{"name":' + b"[" * 1000 + b"]" * 1000 + b"}}", 422, 'is not of type "string"'),
    # beyond 64 bits the parser gives a float: the model would get another number
    (b'{"input":{"times":%d}}' % (2**70 + 1), 422, "outside the 64-bit integer range"),
])
def test_malformed_bodies_get_a_clear_error(serve, body, status, phrase):
    server = serve(HELLO)
    r = server.client.post("/predictions", content=body,
                           headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    assert phrase in (r.text if r.status_code == 400 else str(r.json()))
    assert server.predict(name="after").json()["output"] == "hello after"


def test_input_too_deep_to_pass_on_is_refused_without_losing_the_slot(serve):
    server = serve("bad_outputs")
    deep = b'{"input":{"data":' + b'{"a":' * 300 + b"1" + b"}" * 300 + b"}}"
    for _ in range(3):  # the slot was taken and never given back: 500, then 409 forever
        r = server.client.post("/predictions", content=deep,
                               headers={"content-type": "application/json"})
        assert r.status_code == 422, r.text
        assert r.json()["detail"][0]["loc"] == ["body", "input"]
        assert "cannot be passed to the model" in r.json()["detail"][0]["msg"]
    r = server.predict(data={"a": 1})
    assert r.status_code == 200
    assert r.json()["output"] == {"ok": True, "data": {"a": 1}}
    assert server.health()["status"] == "READY"


@pytest.mark.parametrize("kind,phrase", [
    ("set", "output: set is not JSON-serialisable"),
    ("deep", "nested more than 200 levels deep"),
    ("selfref", "(or the value contains itself)"),
    ("bigint", "the integer 1180591620717411303425 is outside the 64-bit range"),
])
def test_output_json_cannot_carry_fails_the_prediction_clearly(serve, kind, phrase):
    server = serve("bad_outputs")
    body = server.predict(kind=kind).json()
    assert body["status"] == "failed"
    assert phrase in body["error"]
    assert "Traceback" not in body["error"] and "RecursionError" not in body["error"]
    assert server.predict(kind="ok").json()["status"] == "succeeded"


def test_nan_output_is_null_and_fd_garbage_is_replaced_not_lost(serve):
    server = serve("bad_outputs")
    body = server.predict(kind="nan").json()
    assert body["output"] == {"nan": None, "inf": None}  # valid JSON, not a bare NaN
    body = server.predict(kind="fd").json()
    assert body["status"] == "succeeded"
    # written to fd 1 just before run() returned: still this prediction's, bytes replaced
    assert body["logs"] == "raw \ufffd\ufffd bytes\n"


def test_head_is_get_without_a_body(serve):
    server = serve(HELLO)
    for path in ("/", "/health-check", "/openapi.json"):
        r = server.client.head(path)
        assert r.status_code == 200, path
        assert r.content == b""
        assert int(r.headers["content-length"]) > 0
    r = server.client.delete("/health-check")
    assert r.status_code == 405
    assert r.headers["allow"] == "GET,HEAD"  # as coglet (axum) writes it
    assert server.client.head("/predictions").status_code == 200  # GET lists them (issue 27)
    assert server.client.delete("/predictions").headers["allow"] == "GET,HEAD,POST"
    # no body bytes follow a HEAD answer on a kept-alive connection
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"HEAD /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n"
                     b"GET /health-check HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    first, second = data.split(b"\r\n\r\n", 1)
    assert first.startswith(b"HTTP/1.1 200") and second.startswith(b"HTTP/1.1 200")


def test_a_child_forked_in_setup_ends_with_the_server(serve, tmp_path):
    pid_file = tmp_path / "child.pid"
    server = serve("setup_forks", env={"CHILD_PID_FILE": str(pid_file)})
    child = int(pid_file.read_text())
    assert _alive(child)
    try:
        assert server.predict().json()["output"] == "ok"
        assert server.client.post("/shutdown").status_code == 200
        server.process.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the child forked in setup() outlived the server"
    finally:
        if _alive(child):
            os.kill(child, 9)


def test_prediction_ids_one_rule_for_body_and_path(serve):
    server = serve(HELLO)
    rule = "id must be a string of 1 to 256 characters without '/'"
    for bad in ("", "a/b", "x" * 257):
        r = server.client.post("/predictions", json={"id": bad})
        assert r.status_code == 422, bad
        assert r.json()["detail"][0] == {"loc": ["body", "id"], "msg": rule,
                                         "type": "value_error"}
    r = server.client.post("/predictions", json={"id": 5})  # not a string: the body's shape
    assert r.status_code == 422
    assert r.text.startswith("Failed to deserialize the JSON body into the target type: id: ")
    r = server.client.put("/predictions/" + "x" * 257, json={})
    assert r.status_code == 422  # PUT took any length before
    assert r.json()["detail"][0]["loc"] == ["path", "prediction_id"]
    # anything else is an opaque id, echoed back exactly
    for ident in ("x" * 256, "a b", "ünï", "{}"):  # (httpx would resolve "..")
        r = server.client.put(f"/predictions/{ident}", json={})
        assert r.status_code == 200, ident
        assert r.json()["id"] == ident
    assert server.client.post("/predictions", json={"id": "ünï c"}).json()["id"] == "ünï c"
    assert server.client.post("/predictions", json={"id": ".."}).json()["id"] == ".."
    # the path finds the same id the body gave (a finished one: cancel is a no-op 200)
    assert server.client.get("/predictions/ünï c").json()["id"] == "ünï c"
    assert server.client.post("/predictions/ünï c/cancel").status_code == 200


def _post_in_background(server, inputs: dict) -> tuple[threading.Thread, dict]:
    result: dict = {}

    def call() -> None:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            result["response"] = client.post("/predictions", json={"input": inputs})

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while server.health()["status"] != "BUSY" and time.monotonic() < deadline:
        time.sleep(0.02)
    return thread, result


@pytest.mark.parametrize("how", ["worker dies while draining", "second Ctrl-C"])
def test_shutdown_does_not_hang_when_the_worker_ends_mid_prediction(serve, how):
    server = serve("sleepy")
    worker = server.worker_pids()[0]
    thread, result = _post_in_background(server, {"sleep": 30})
    if how == "worker dies while draining":
        os.kill(server.pid, signal.SIGTERM)  # drain: waits for the prediction...
        time.sleep(0.3)
        os.kill(worker, signal.SIGKILL)  # ...which can no longer finish
    else:
        os.killpg(server.pid, signal.SIGINT)  # the worker has its own group: not reached
        time.sleep(0.3)
        assert _alive(worker)
        os.killpg(server.pid, signal.SIGINT)
    assert server.process.wait(timeout=20) == 0  # it used to wait for ever
    thread.join(timeout=10)
    body = result["response"].json()
    assert body["status"] == "failed"
    assert "during shutdown" in body["error"]
    assert not _alive(worker)


def _sigint_a_thread_that_is_not_the_main_one(pid: int) -> None:
    """What the kernel may do with the SIGINT a terminal sends the process group: hand it
    to any thread that does not block it (here the one waiting for the worker)."""
    others = [int(t.name) for t in pathlib.Path(f"/proc/{pid}/task").iterdir()
              if int(t.name) != pid]
    assert others, "the CLI runs no thread besides its main one"
    if ctypes.CDLL(None, use_errno=True).tgkill(pid, others[0], signal.SIGINT) != 0:
        raise OSError(ctypes.get_errno(), "tgkill")


@pytest.mark.parametrize("to", ["process group", "another thread"])
def test_ctrl_c_in_cogserve_predict_stops_the_worker(tmp_path, to):
    proc = subprocess.Popen([sys.executable, "-m", "cogserve.cli", "predict",
                             str(MODELS / "sleepy"), "-i", "sleep=30"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stderr is not None
        seen = ""
        while "from-child hi" not in seen:  # run() printed its last line before its sleep
            line = proc.stderr.readline()
            assert line, seen
            seen += line
        worker = int(subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                    text=True).stdout.split()[0])
        if to == "process group":
            os.killpg(proc.pid, signal.SIGINT)  # what the terminal sends on Ctrl-C
        else:  # it was handled only once the loop next woke up: when run() returned
            _sigint_a_thread_that_is_not_the_main_one(proc.pid)
        _, err = proc.communicate(timeout=20)  # it used to wait for run() to return
        assert proc.returncode == 130
        assert err.rstrip().endswith("interrupted") and "Traceback" not in err
        deadline = time.monotonic() + 10
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(worker)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
