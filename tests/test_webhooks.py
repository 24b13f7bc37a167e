"""Webhooks end to end: a real server, a real local receiver, real HTTP both ways."""

from __future__ import annotations

import pytest
from receiver import SETTLE

import cogserve

ASYNC = {"Prefer": "respond-async"}
FAST = {"COG_THROTTLE_RESPONSE_INTERVAL": "0.05"}


def _outputs_grow(bodies: list[dict]) -> None:
    """Deliveries are in order: status never goes back, the output list only grows."""
    rank = {"starting": 0, "processing": 1, "succeeded": 2, "failed": 2, "canceled": 2}
    statuses = [rank[b["status"]] for b in bodies]
    assert statuses == sorted(statuses), [b["status"] for b in bodies]
    lengths = [len(b["output"] or []) for b in bodies]
    assert lengths == sorted(lengths), lengths
    logs = [len(b["logs"]) for b in bodies]
    assert logs == sorted(logs), logs


def _delivered_output(hook, k: int) -> None:
    """Wait until a `processing` delivery carries exactly the first k tokens."""
    want = [f"tok{i}" for i in range(k)]
    hook.wait_until(lambda bodies: any(
        b["status"] == "processing" and b["output"] == want for b in bodies))


def test_async_prediction_default_filter_sends_every_event_in_order(serve, receiver, tmp_path):
    server = serve("hooks", env=FAST)
    hook = receiver()
    gate = str(tmp_path / "gate")
    r = server.client.post("/predictions", headers=ASYNC, json={
        "id": "all1", "input": {"n": 3, "gate": gate}, "webhook": hook.url})
    assert r.status_code == 202
    accepted = r.json()
    assert accepted["id"] == "all1" and accepted["status"] == "starting"
    assert accepted["input"] == {"n": 3, "gate": gate}
    assert accepted["created_at"] and accepted["output"] == []
    # the model makes token k only once the delivery of token k-1 has arrived: every
    # token shows up on its own, in a `processing` delivery
    for k in (1, 2, 3):
        _delivered_output(hook, k)
        (tmp_path / f"gate{k}").touch()
    bodies = hook.wait_for_terminal()
    _outputs_grow(bodies)
    first, last = bodies[0], bodies[-1]
    assert first["status"] == "starting" and first["id"] == "all1"
    assert first["input"] == {"n": 3, "gate": gate}
    assert last["status"] == "succeeded"
    assert last["output"] == ["tok0", "tok1", "tok2"]
    assert last["logs"] == "log 0\nlog 1\nlog 2\n"
    assert last["metrics"]["predict_time"] > 0
    middle = bodies[1:-1]
    assert middle and all(b["status"] == "processing" for b in middle)
    assert [b["status"] for b in bodies].count("succeeded") == 1
    assert all(h.path == "/hook" for h in hook.hits)


@pytest.mark.parametrize("events", [["start"], ["completed"], ["start", "completed"],
                                    ["output"], ["logs"], ["output", "completed"]])
def test_webhook_events_filter(serve, receiver, events):
    server = serve("hooks", env=FAST)
    hook = receiver()
    r = server.client.post("/predictions", headers=ASYNC, json={
        "input": {"n": 3, "delay": 0.1}, "webhook": hook.url, "webhook_events_filter": events})
    assert r.status_code == 202
    if events == ["start"]:
        bodies = hook.wait_until(lambda b: len(b) >= 1)
        server.client.put(f"/predictions/{r.json()['id']}", json={})  # waits for the end
        bodies = hook.wait_until(lambda b: True, settle=SETTLE)
        assert [b["status"] for b in bodies] == ["starting"]
        return
    if events in (["output"], ["logs"]):
        want = "output" if events == ["output"] else "logs"
        full = ["tok0", "tok1", "tok2"] if want == "output" else "log 0\nlog 1\nlog 2\n"
        bodies = hook.wait_until(lambda b: bool(b) and b[-1][want] == full, settle=SETTLE)
        assert all(b["status"] != "starting" for b in bodies)
        _outputs_grow(bodies)
        # the final state is never lost to throttling, and nothing follows it
        assert bodies[-1][want] == full
        return
    bodies = hook.wait_for_terminal()
    _outputs_grow(bodies)
    statuses = [b["status"] for b in bodies]
    if events == ["completed"]:
        assert statuses == ["succeeded"]
    elif events == ["start", "completed"]:
        assert statuses == ["starting", "succeeded"]
    else:
        assert statuses[-1] == "succeeded" and "starting" not in statuses
        assert all(s == "processing" for s in statuses[:-1]) and len(statuses) >= 2
    assert bodies[-1]["output"] == ["tok0", "tok1", "tok2"]


def test_sync_request_with_webhook_also_sends_and_failure_is_reported(serve, receiver):
    server = serve("hooks", env=FAST)
    hook = receiver()
    r = server.client.post("/predictions", json={
        "input": {"n": 2, "fail": True}, "webhook": hook.url})
    assert r.status_code == 200
    assert r.json()["status"] == "failed"
    bodies = hook.wait_for_terminal()
    assert bodies[0]["status"] == "starting"
    assert bodies[-1]["status"] == "failed"
    assert bodies[-1]["error"] == ("Prediction failed: Generator iteration error: ValueError: "
                                   "hook failure")
    assert bodies[-1]["output"] is None  # a failure reports no output, as the reference


def test_fast_model_is_throttled_and_final_output_is_complete(serve, receiver):
    server = serve("hooks")  # the default interval, 0.5 s
    hook = receiver()
    n = 400
    r = server.client.post("/predictions", json={
        "input": {"n": n, "delay": 0.005}, "webhook": hook.url})
    body = r.json()
    assert body["status"] == "succeeded" and len(body["output"]) == n
    bodies = hook.wait_for_terminal()
    duration = body["metrics"]["predict_time"]
    intermediate = [b for b in bodies if b["status"] == "processing"]
    # one per 0.5 s, plus the leading one and the one flushed at the end
    assert len(intermediate) <= duration / 0.5 + 3, (len(intermediate), duration)
    assert len(intermediate) < n / 10  # 800 output and log events were coalesced
    assert bodies[0]["status"] == "starting"
    assert bodies[-1]["status"] == "succeeded"
    assert bodies[-1]["output"] == [f"tok{i}" for i in range(n)]
    _outputs_grow(bodies)


@pytest.mark.parametrize("how", ["status", "drop", "429"])
def test_failed_deliveries_are_retried(serve, receiver, how):
    server = serve("sleepy")
    hook = receiver(fail_first=2, drop=how == "drop",
                    fail_status=429 if how == "429" else 503)
    r = server.client.post("/predictions", json={
        "input": {"text": "retry"}, "webhook": hook.url,
        "webhook_events_filter": ["completed"]})
    assert r.json()["output"] == "RETRY"
    bodies = hook.wait_for_terminal()
    assert [b["status"] for b in bodies] == ["succeeded"]
    assert bodies[0]["output"] == "RETRY"
    # the same body was tried three times: two failed attempts, then the delivery
    assert len(hook.hits) == 3
    assert all(h.body == bodies[0] for h in hook.hits)


def test_retries_are_bounded(serve, receiver):
    server = serve("sleepy", env={"COGSERVE_WEBHOOK_MAX_ATTEMPTS": "3"})
    hook = receiver(fail_first=1000)
    r = server.client.post("/predictions", json={
        "input": {"text": "x"}, "webhook": hook.url, "webhook_events_filter": ["completed"]})
    assert r.json()["status"] == "succeeded"
    hook.wait_until(lambda _b: len(hook.hits) >= 3)
    # nothing more arrives: a fourth attempt would come within the backoff (0.4 s)
    second = receiver()
    server.client.post("/predictions", json={
        "input": {"text": "y"}, "webhook": second.url, "webhook_events_filter": ["completed"]})
    second.wait_for_terminal()
    second.wait_until(lambda _b: True, settle=SETTLE)
    assert len(hook.hits) == 3


def test_a_receiver_that_never_answers_delays_nothing(serve, receiver):
    server = serve("sleepy", env={"COGSERVE_WEBHOOK_TIMEOUT": "60"})
    hook = receiver(hang=True)
    r = server.client.post("/predictions", json={"input": {"text": "a"}, "webhook": hook.url})
    assert r.json()["status"] == "succeeded" and r.json()["output"] == "A"
    r = server.client.post("/predictions", headers=ASYNC,
                           json={"id": "h2", "input": {"text": "b"}, "webhook": hook.url})
    assert r.status_code == 202
    # a plain PUT retry waits for h2 (or, if it already ended, runs a fresh one)
    assert server.client.put("/predictions/h2", json={}).json()["status"] == "succeeded"
    r = server.predict(text="next")
    assert r.status_code == 200 and r.json()["output"] == "NEXT"
    assert server.health()["status"] == "READY"
    # the receiver saw the first start attempt and is still holding it
    assert hook.hits and hook.hits[0].body["status"] == "starting"


def test_trace_headers_and_user_agent(serve, receiver):
    server = serve("sleepy")
    hook = receiver()
    trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    r = server.client.post("/predictions", headers={"traceparent": trace,
                                                    "tracestate": "congo=t61rcWkgMzE"},
                           json={"input": {"text": "t"}, "webhook": hook.url})
    assert r.json()["status"] == "succeeded"
    hook.wait_for_terminal()
    assert len(hook.hits) >= 2
    for hit in hook.hits:
        assert hit.headers["traceparent"] == trace
        assert hit.headers["tracestate"] == "congo=t61rcWkgMzE"
        assert hit.headers["user-agent"] == f"cogserve/{cogserve.__version__}"
        assert hit.headers["content-type"] == "application/json"
    # a request without trace headers sends none
    plain = receiver()
    server.client.post("/predictions", json={"input": {}, "webhook": plain.url})
    plain.wait_for_terminal()
    assert all("traceparent" not in h.headers for h in plain.hits)


def test_bad_webhook_fields_are_422(serve):
    server = serve("sleepy")
    for bad in ("ftp://x", "http://", "https:///path", "http://h:99999/"):
        r = server.client.post("/predictions", json={"input": {}, "webhook": bad})
        assert r.status_code == 422, bad
        assert r.json()["detail"][0]["loc"] == ["body", "webhook"]
    # not a string, or an unknown event: the body's shape, answered as coglet does
    shape = "Failed to deserialize the JSON body into the target type: "
    r = server.client.post("/predictions", json={"input": {}, "webhook": 5})
    assert r.status_code == 422 and r.text.startswith(shape + "webhook: ")
    r = server.client.post("/predictions", json={"input": {}, "webhook": "http://127.0.0.1:1/h",
                                                 "webhook_events_filter": ["bogus"]})
    assert r.status_code == 422
    assert r.text.startswith(shape + "webhook_events_filter[0]: unknown variant \"bogus\"")
    assert server.predict(text="ok").json()["output"] == "OK"


def test_unreachable_webhook_does_not_fail_the_prediction(serve):
    server = serve("sleepy", env={"COGSERVE_WEBHOOK_MAX_ATTEMPTS": "2"})
    r = server.client.post("/predictions", json={"input": {"text": "u"},
                                                 "webhook": "http://127.0.0.1:9/nothing"})
    assert r.json()["status"] == "succeeded"
    assert server.predict(text="v").json()["output"] == "V"


def test_put_respond_async_retry_returns_current_state_and_creates_nothing(serve, receiver,
                                                                          tmp_path):
    server = serve("hooks", env=FAST)
    hook = receiver()
    gate = str(tmp_path / "gate")
    r = server.client.put("/predictions/p1", headers=ASYNC, json={
        "input": {"n": 2, "gate": gate}, "webhook": hook.url})
    assert r.status_code == 202 and r.json()["status"] == "starting"
    _delivered_output(hook, 1)  # the model now waits for gate1: p1 is still running
    again = server.client.put("/predictions/p1", headers=ASYNC,
                              json={"input": {"n": 5}, "webhook": hook.url})
    assert again.status_code == 202
    current = again.json()
    assert current["id"] == "p1" and current["status"] == "processing"
    assert current["input"] == {"n": 2, "gate": gate}  # the running one, not the retry's
    assert current["output"] == ["tok0"]
    (tmp_path / "gate1").touch()
    (tmp_path / "gate2").touch()
    bodies = hook.wait_for_terminal()
    assert [b["status"] for b in bodies].count("starting") == 1  # no second prediction
    assert bodies[-1]["output"] == ["tok0", "tok1"]


def test_sigterm_delivers_queued_webhooks_before_exit(serve, receiver):
    import os
    import signal

    server = serve("sleepy")
    hook = receiver(fail_first=3)  # the delivery is still being retried at exit time
    r = server.client.post("/predictions", headers=ASYNC, json={
        "input": {"text": "bye", "sleep": 1}, "webhook": hook.url,
        "webhook_events_filter": ["completed"]})
    assert r.status_code == 202
    os.kill(server.pid, signal.SIGTERM)
    assert server.process.wait(timeout=30) == 0
    bodies = hook.delivered()
    assert [b["status"] for b in bodies] == ["succeeded"]
    assert bodies[0]["output"] == "BYE"


def test_a_hanging_receiver_does_not_hold_up_another_predictions_webhooks(serve, receiver):
    server = serve("async_slots", env={"COGSERVE_WEBHOOK_TIMEOUT": "60"})
    stuck = receiver(hang=True)
    healthy = receiver()
    r = server.client.post("/predictions", headers=ASYNC, json={
        "id": "slow", "input": {"text": "a", "sleep": 0.2}, "webhook": stuck.url})
    assert r.status_code == 202
    stuck.wait_until(lambda _b: len(stuck.hits) >= 1)  # its start delivery now hangs
    r = server.client.post("/predictions", headers=ASYNC, json={
        "id": "fine", "input": {"text": "b", "sleep": 0.2}, "webhook": healthy.url})
    assert r.status_code == 202
    bodies = healthy.wait_for_terminal()
    assert bodies[0]["status"] == "starting" and bodies[-1]["status"] == "succeeded"
    assert bodies[-1]["output"] == "b"
    assert len(stuck.hits) == 1  # the stuck one is still waiting on its first delivery
    assert server.health()["status"] == "READY"  # both slots came back
