"""Cancellation end to end: real server, real signals, a real webhook receiver.

Each test checks the prediction ended `canceled` (in its completed webhook), whether
the worker survived (cancel honoured) or was replaced (cancel ignored), and that the
next prediction succeeds.
"""

from __future__ import annotations

import socket

import pytest

ASYNC = {"Prefer": "respond-async"}


def _start(server, hook, pid: str, **inputs) -> None:
    r = server.client.post("/predictions", headers=ASYNC, json={
        "id": pid, "input": inputs, "webhook": hook.url})
    assert r.status_code == 202, r.text
    # run() has begun once its first line is logged
    hook.wait_until(lambda bodies: any(f"start {inputs['text']}" in b["logs"] for b in bodies))


def _canceled(hook) -> dict:
    bodies = hook.wait_for_terminal()
    final = bodies[-1]
    assert final["status"] == "canceled", final
    assert [b["status"] for b in bodies].count("canceled") == 1
    return final


@pytest.mark.parametrize("model,inputs", [
    ("cancel_sync", {"sleep": 60}),  # blocked in time.sleep
    ("cancel_sync", {"busy": 60}),  # a busy Python loop
    ("cancel_sync", {"busy": 60, "spam": True}),  # printing as fast as it can
    ("cancel_async", {"sleep": 60}),  # awaiting asyncio.sleep
])
def test_cancel_interrupts_run_and_the_worker_survives(serve, receiver, model, inputs):
    server = serve(model)
    [worker] = server.worker_pids()
    hook = receiver()
    _start(server, hook, "c1", text="c1", **inputs)
    r = server.client.post("/predictions/c1/cancel")
    assert r.status_code == 200 and r.json()["status"] == "canceled"  # answered once ended
    final = _canceled(hook)
    assert "cleanup c1" in final["logs"]  # the model saw the exception and cleaned up
    assert "end c1" not in final["logs"]
    assert final["output"] is None and final["error"] is None
    assert final["metrics"]["predict_time"] < 60
    assert server.worker_pids() == [worker]  # interrupted, not killed
    server.wait_for("READY")
    for i in range(5):  # the channel to the worker is intact
        r = server.client.post("/predictions", json={"input": {"text": f"next{i}"}})
        assert r.json()["status"] == "succeeded" and r.json()["output"] == f"NEXT{i}"
        assert r.json()["logs"] == f"start next{i}\nend next{i}\n"


def test_sync_caller_of_a_canceled_prediction_gets_canceled(serve, receiver):
    server = serve("cancel_sync")
    hook = receiver()
    import threading

    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("r", server.client.put(
        "/predictions/sc1", json={"input": {"text": "sc1", "sleep": 60}, "webhook": hook.url})))
    thread.start()
    hook.wait_until(lambda bodies: any("start sc1" in b["logs"] for b in bodies))
    assert server.client.post("/predictions/sc1/cancel").status_code == 200
    thread.join(timeout=30)
    assert result["r"].status_code == 200
    assert result["r"].json()["status"] == "canceled"
    assert server.predict(text="after").json()["output"] == "AFTER"


def test_cancel_repeated_three_times_then_once_finished(serve, receiver, tmp_path):
    server = serve("cancel_sync")
    hook = receiver()
    gate = tmp_path / "cleanup-done"  # the model's cleanup lasts until the gate opens
    _start(server, hook, "rep", text="rep", sleep=60, cleanup_gate=str(gate))
    codes = [server.client.post("/predictions/rep/cancel").status_code for _ in range(3)]
    assert codes == [200, 200, 200]  # the prediction still exists for all three
    gate.touch()
    assert "cleanup rep" in _canceled(hook)["logs"]
    server.wait_for("READY")
    # a finished prediction is kept: cancelling it again is 200 and changes nothing
    assert server.client.post("/predictions/rep/cancel").status_code == 200
    assert server.client.get("/predictions/rep").json()["status"] == "canceled"
    assert server.predict(text="next").json()["output"] == "NEXT"


def test_cancel_unknown_id_is_404(serve):
    server = serve("cancel_sync")
    r = server.client.post("/predictions/nope/cancel")
    assert r.status_code == 404 and r.json() == {}  # as the reference answers
    assert server.client.get("/predictions/nope/cancel").status_code == 405
    assert server.predict(text="ok").json()["output"] == "OK"


@pytest.mark.parametrize("model", ["sleepy", "cancel_async"])
def test_a_model_that_swallows_the_cancel_gets_a_new_worker(serve, receiver, model):
    server = serve(model, env={"COGSERVE_CANCEL_TIMEOUT": "1"})
    [old] = server.worker_pids()
    hook = receiver()
    _start(server, hook, "sw", text="sw", sleep=60, swallow=True)
    assert server.client.post("/predictions/sw/cancel").status_code == 200
    final = _canceled(hook)
    assert "the worker was stopped after a cancel was ignored" in final["logs"]
    assert "ignored its cancel" in server.output()  # the server's own log says so too
    health = server.wait_for("READY", timeout=30)
    assert health["setup"]["status"] == "succeeded"  # setup ran again in the new worker
    [new] = server.worker_pids()
    assert new != old
    r = server.client.post("/predictions", json={"input": {"text": "next"}})
    assert r.json()["status"] == "succeeded" and r.json()["output"] == "NEXT"


def test_client_disconnect_cancels_a_sync_prediction(serve, receiver):
    server = serve("cancel_sync")
    [worker] = server.worker_pids()
    hook = receiver()
    sock = socket.create_connection(("127.0.0.1", server.port))
    body = (b'{"id":"gone","input":{"text":"gone","sleep":60},"webhook":"'
            + hook.url.encode() + b'"}')
    sock.sendall(b"POST /predictions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    hook.wait_until(lambda bodies: any("start gone" in b["logs"] for b in bodies))
    sock.close()
    final = _canceled(hook)
    assert "cleanup gone" in final["logs"]
    assert server.worker_pids() == [worker]
    server.wait_for("READY")
    assert server.predict(text="next").json()["output"] == "NEXT"


def test_async_request_survives_its_client_going_away(serve, receiver):
    server = serve("cancel_sync")
    hook = receiver()
    sock = socket.create_connection(("127.0.0.1", server.port))
    body = (b'{"id":"stay","input":{"text":"stay","sleep":0.5},"webhook":"'
            + hook.url.encode() + b'"}')
    sock.sendall(b"POST /predictions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Prefer: respond-async\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    assert sock.recv(65536).startswith(b"HTTP/1.1 202")
    sock.close()
    final = hook.wait_for_terminal()[-1]
    assert final["status"] == "succeeded" and final["output"] == "STAY"


@pytest.mark.parametrize("model", ["cancel_sync", "cancel_async"])
def test_cancel_right_after_create_is_honoured(serve, receiver, model):
    """The cancel may reach the worker before the prediction does (two sockets); it
    must still be honoured, not left to the grace-period kill."""
    server = serve(model)
    [worker] = server.worker_pids()
    for i in range(5):
        hook = receiver()
        r = server.client.post("/predictions", headers=ASYNC, json={
            "id": f"e{i}", "input": {"text": f"e{i}", "sleep": 60}, "webhook": hook.url,
            "webhook_events_filter": ["completed"]})
        assert r.status_code == 202
        assert server.client.post(f"/predictions/e{i}/cancel").status_code == 200
        assert _canceled(hook)["output"] is None
        server.wait_for("READY")
    assert server.worker_pids() == [worker]
    assert server.predict(text="next").json()["output"] == "NEXT"


def test_a_cancel_answer_tells_how_the_prediction_really_ended(serve):
    """A cancel races the result: its answer carries the final state, whichever won."""
    server = serve("cancel_sync")
    outcomes = set()
    for i in range(40):
        pid = f"race-{i}"
        started = server.client.put(f"/predictions/{pid}", headers={"Prefer": "respond-async"},
                                    json={"input": {"sleep": (i % 8) * 0.001}})
        assert started.status_code == 202
        answer = server.client.post(f"/predictions/{pid}/cancel")
        assert answer.status_code == 200
        final = server.client.get(f"/predictions/{pid}").json()
        assert final["status"] in ("succeeded", "canceled")
        assert answer.json()["status"] == final["status"], (answer.json(), final)
        outcomes.add(final["status"])
    assert "canceled" in outcomes
