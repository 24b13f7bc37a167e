"""Deadlines: --predict-timeout and the X-Prediction-Timeout header.

A prediction past its deadline is cancelled through the normal path and fails with
`prediction exceeded its deadline of S seconds`; a model that ignores the cancel has
its worker restarted. One server (a 2 s limit, a 1 s cancel timeout) serves the module.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from harness import Server


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with Server("sleepy", "--predict-timeout", "2",
                env={"COGSERVE_CANCEL_TIMEOUT": "1"}) as srv:
        yield srv


def _predict(server: Server, timeout: str | None = None, **inputs) -> dict:
    server.wait_for("READY")
    headers = {"X-Prediction-Timeout": timeout} if timeout else {}
    r = server.client.post("/predictions", headers=headers, json={"input": inputs})
    assert r.status_code == 200, r.text
    return r.json()


def test_a_sleeping_model_is_stopped_at_the_server_deadline(server):
    [worker] = server.worker_pids()
    body = _predict(server, text="slow", sleep=60)
    assert body["status"] == "failed"
    assert body["error"] == "prediction exceeded its deadline of 2 seconds"
    assert "start slow" in body["logs"] and "end slow" not in body["logs"]
    assert server.worker_pids() == [worker]  # the cancel was honoured: same worker
    assert _predict(server, text="next")["output"] == "NEXT"


def test_the_header_shortens_the_deadline_but_cannot_extend_it(server):
    body = _predict(server, "0.3", text="short", sleep=60)
    assert body["status"] == "failed"
    assert body["error"] == "prediction exceeded its deadline of 0.3 seconds"
    body = _predict(server, "1000", text="capped", sleep=60)
    assert body["error"] == "prediction exceeded its deadline of 2 seconds"
    assert _predict(server, "5", text="quick")["status"] == "succeeded"


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan", "inf"])
def test_a_bad_header_is_refused(server, value):
    server.wait_for("READY")
    r = server.client.post("/predictions", headers={"X-Prediction-Timeout": value},
                           json={"input": {"text": "x"}})
    assert r.status_code == 400
    assert "X-Prediction-Timeout must be a positive number of seconds" in r.json()["error"]


def test_a_model_ignoring_the_cancel_gets_its_worker_restarted(server):
    [worker] = server.worker_pids()
    body = _predict(server, "0.3", text="stubborn", sleep=60, swallow=True)
    assert body["status"] == "failed"
    assert body["error"] == "prediction exceeded its deadline of 0.3 seconds"
    assert "swallowed a cancel" in body["logs"]
    server.wait_for("READY")
    assert server.worker_pids() != [worker]  # replaced, setup() ran again
    assert "setting up sleepy" in server.health()["setup"]["logs"]
    assert _predict(server, text="after")["output"] == "AFTER"


def test_no_deadline_by_default(serve):
    plain = serve("sleepy")
    r = plain.client.post("/predictions", json={"input": {"text": "t", "sleep": 0.5}})
    assert r.json()["status"] == "succeeded"
    r = plain.client.post("/predictions", headers={"X-Prediction-Timeout": "0.2"},
                          json={"input": {"text": "t", "sleep": 30}})
    assert r.json()["error"] == "prediction exceeded its deadline of 0.2 seconds"
