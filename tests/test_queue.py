"""The bounded queue (--queue-size): FIFO order, 429 when full (Cog's routes and V2), cancel,
timeout, health.

One server with one slot and a queue of 3 is shared by the module; every test holds
the slot with a prediction blocked on a gate file of its own, so the queue state each
test sees is its own, and opens the gate before it ends.
"""

from __future__ import annotations

import datetime
import pathlib
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from harness import Server

ASYNC = {"Prefer": "respond-async"}


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with Server("gated", "--queue-size", "3") as srv:
        yield srv


def _when(value: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(value)


def _hold(server: Server, tmp: pathlib.Path, hook_url: str) -> pathlib.Path:
    """Occupy the only slot (prediction `holder-<test folder>`) until the returned gate
    file is created. Its journal line reads `holder`."""
    pid = f"holder-{tmp.name}"  # ids are remembered once finished: one per test
    gate = tmp / f"gate-{pid}"
    journal = tmp / "journal"
    r = server.client.put(f"/predictions/{pid}", headers=ASYNC, json={
        "input": {"text": "holder", "gate": str(gate), "journal": str(journal)},
        "webhook": hook_url})
    assert r.status_code == 202, r.text
    limit = time.monotonic() + 30
    while not (journal.exists() and "holder" in journal.read_text()):  # run() has begun
        assert time.monotonic() < limit, "the holder never started"
        time.sleep(0.01)
    return gate


def _journal(tmp: pathlib.Path) -> list[str]:
    path = tmp / "journal"
    return [line.split()[0] for line in path.read_text().splitlines()] if path.exists() else []


def test_fifo_order_429_when_full_and_health(server, receiver, tmp_path):
    hook = receiver()
    server.wait_for("READY")
    gate = _hold(server, tmp_path, hook.url)
    doc = server.health()
    assert doc["status"] == "READY"  # the slot is busy but the queue has room
    assert doc["queue"] == {"length": 0, "size": 3}
    for pid in ("q1", "q2", "q3"):
        r = server.client.put(f"/predictions/{pid}", headers=ASYNC, json={
            "input": {"text": pid, "journal": str(tmp_path / "journal")}, "webhook": hook.url})
        assert r.status_code == 202, r.text
        assert r.json()["status"] == "starting" and r.json()["started_at"] is None
        polled = server.client.get(f"/predictions/{pid}").json()  # polling a queued one
        assert polled["status"] == "starting" and polled["started_at"] is None
    again = server.client.put("/predictions/q2", headers=ASYNC, json={"input": {"text": "q2"}})
    assert again.status_code == 202 and again.json()["id"] == "q2"  # the queued one, not a new one
    doc = server.health()
    assert doc["status"] == "BUSY" and doc["queue"] == {"length": 3, "size": 3}
    full = server.client.post("/predictions", json={"input": {"text": "q4"}})
    assert full.status_code == 429, full.text
    assert "queue is full" in full.json()["error"]
    assert int(full.headers["retry-after"]) >= 1
    documented = server.client.get("/openapi.json").json()["paths"]["/predictions"]["post"]
    assert documented["responses"]["429"]["description"].startswith("Too Many Requests")
    gate.touch()
    bodies = hook.wait_until(lambda b: {x["id"] for x in b if x["status"] == "succeeded"}
                             >= {f"holder-{tmp_path.name}", "q1", "q2", "q3"})
    assert _journal(tmp_path) == ["holder", "q1", "q2", "q3"]  # the model saw them in order
    final = {b["id"]: b for b in bodies if b["status"] == "succeeded"}
    starts = [_when(final[p]["started_at"]) for p in ("q1", "q2", "q3")]
    assert starts == sorted(starts)
    # the start webhook of a queued prediction fires when it starts, not when it is queued
    first_q1 = next(b for b in bodies if b["id"] == "q1")
    assert first_q1["started_at"] is not None
    holder = final[f"holder-{tmp_path.name}"]
    holder_end = float(holder["output"].rpartition("end=")[2])  # the model's clock
    assert _when(first_q1["started_at"]).timestamp() >= holder_end
    assert server.health()["queue"]["length"] == 0


def test_v2_answers_a_full_queue_with_429_and_retry_after(server, receiver, tmp_path):
    hook = receiver()
    server.wait_for("READY")
    gate = _hold(server, tmp_path, hook.url)
    queued = [f"v2q{i}-{tmp_path.name}" for i in range(3)]
    for pid in queued:
        r = server.client.put(f"/predictions/{pid}", headers=ASYNC, json={
            "input": {"text": pid}, "webhook": hook.url})
        assert r.status_code == 202, r.text
    cog = server.client.post("/predictions", json={"input": {"text": "cog"}})
    v2 = server.client.post("/v2/models/gated/infer", json={"inputs": [
        {"name": "text", "datatype": "BYTES", "shape": [1], "data": ["v2"]}]})
    assert v2.status_code == 429, v2.text
    assert v2.json() == {"error": "The queue is full (3 predictions waiting); retry later"}
    assert int(v2.headers["retry-after"]) >= 1
    assert v2.headers["retry-after"] == cog.headers["retry-after"]  # one estimate, both APIs
    gate.touch()
    hook.wait_until(lambda b: {x["id"] for x in b if x["status"] == "succeeded"} >= set(queued))


def test_sync_request_waits_in_the_queue(server, receiver, tmp_path):
    hook = receiver()
    server.wait_for("READY")
    gate = _hold(server, tmp_path, hook.url)
    result: dict[str, httpx.Response] = {}
    thread = threading.Thread(target=lambda: result.setdefault(
        "r", server.client.post("/predictions", json={"input": {"text": "waiter"}})))
    thread.start()
    limit = time.monotonic() + 30
    while server.health()["queue"]["length"] != 1:
        assert time.monotonic() < limit
        time.sleep(0.01)
    gate.touch()
    thread.join(timeout=30)
    assert result["r"].status_code == 200
    assert result["r"].json()["status"] == "succeeded"
    assert result["r"].json()["output"].startswith("waiter ")


def test_cancel_of_a_queued_prediction_never_reaches_the_model(server, receiver, tmp_path):
    hook = receiver()
    server.wait_for("READY")
    gate = _hold(server, tmp_path, hook.url)
    r = server.client.put("/predictions/gone", headers=ASYNC, json={
        "input": {"text": "gone", "journal": str(tmp_path / "journal")}, "webhook": hook.url})
    assert r.status_code == 202
    r = server.client.put("/predictions/kept", headers=ASYNC, json={
        "input": {"text": "kept", "journal": str(tmp_path / "journal")}, "webhook": hook.url})
    assert r.status_code == 202
    assert server.client.post("/predictions/gone/cancel").status_code == 200
    canceled = hook.wait_until(lambda b: any(x["id"] == "gone" and x["status"] == "canceled"
                                             for x in b))
    final = next(x for x in canceled if x["id"] == "gone" and x["status"] == "canceled")
    assert final["started_at"] is None and final["logs"] == ""
    assert server.health()["queue"]["length"] == 1
    gate.touch()
    hook.wait_until(lambda b: any(x["id"] == "kept" and x["status"] == "succeeded" for x in b))
    assert _journal(tmp_path) == ["holder", "kept"]  # "gone" never ran
    polled = server.client.get("/predictions/gone").json()  # the store of finished ones
    assert polled["status"] == "canceled" and polled["started_at"] is None
    assert not any(x["id"] == "gone" and x["status"] != "canceled"
                   for x in hook.delivered())


def test_queue_timeout_fails_with_a_clear_error(serve, receiver, tmp_path):
    server = serve("gated", "--queue-size", "2", "--queue-timeout", "0.2")
    hook = receiver()
    gate = _hold(server, tmp_path, hook.url)
    r = server.client.post("/predictions", json={"input": {"text": "late"}})
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "failed"
    assert body["error"] == ("prediction waited in the queue for more than 0.2 seconds "
                             "(--queue-timeout) without a free slot")
    assert body["started_at"] is None
    gate.touch()
    hook.wait_until(lambda b: any(x["id"].startswith("holder") and x["status"] == "succeeded"
                                  for x in b))
    assert server.predict(text="after").json()["status"] == "succeeded"


def test_queue_size_from_the_environment_and_default_409(serve, receiver, tmp_path):
    queued = serve("gated", env={"COGSERVE_QUEUE_SIZE": "1"})
    assert queued.health()["queue"] == {"length": 0, "size": 1}
    plain = serve("gated")  # Cog's behaviour: no queue, 409 at once
    hook = receiver()
    gate = _hold(plain, tmp_path, hook.url)
    assert "queue" not in plain.health()
    assert plain.health()["status"] == "BUSY"
    r = plain.client.post("/predictions", json={"input": {"text": "no"}})
    assert r.status_code == 409
    gate.touch()
    hook.wait_until(lambda b: any(x["status"] == "succeeded" for x in b))


def test_sse_stream_of_a_queued_prediction_starts_when_it_runs(serve, tmp_path):
    from test_sse import Reader, names

    server = serve("stream", "--queue-size", "1")
    gate = tmp_path / "gate"
    r = server.client.put("/predictions/hold", headers=ASYNC,
                          json={"input": {"n": 2, "gate": str(gate)}})
    assert r.status_code == 202
    limit = time.monotonic() + 30
    while server.client.get("/predictions/hold").json()["status"] != "processing":
        assert time.monotonic() < limit
        time.sleep(0.01)
    reader = Reader(httpx.Client(base_url=server.url, timeout=60), "PUT", "/predictions/sq",
                    {"input": {"n": 2}}, own_client=True)
    try:
        assert reader.response.status_code == 200  # the stream is open while it waits
        assert server.health()["queue"]["length"] == 1
        assert server.client.get("/predictions/sq").json()["started_at"] is None
        gate.touch()
        events = reader.rest()
    finally:
        reader.close()
    assert names(events)[0] == "start"
    assert [d["chunk"] for n, d in events if n == "output"] == ["tok0", "tok1"]
    final = events[-1][1]
    assert events[-1][0] == "completed" and final["status"] == "succeeded"
    hold = server.client.get("/predictions/hold").json()
    assert hold["status"] == "succeeded"
    assert final["started_at"] >= hold["started_at"]
