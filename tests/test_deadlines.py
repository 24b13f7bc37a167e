"""Deadlines: --predict-timeout, the X-Prediction-Timeout header, and on V2 Triton's
`timeout` request parameter (microseconds).

A prediction past its deadline is cancelled through the normal path and fails with
`prediction exceeded its deadline of S seconds` (V2: 503 with that message, as Triton
answers an expired request); a model that ignores the cancel has its worker restarted.
One server (a 2 s limit, a 1 s cancel timeout) serves the module.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from harness import Server


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with Server("sleepy", "--predict-timeout", "2",
                env={"COGSERVE_CANCEL_TIMEOUT": "1"}) as srv:
        yield srv


V2 = "/v2/models/sleepy/infer"


def _infer(server: Server, text: str, headers: dict | None = None, **parameters
           ) -> httpx.Response:
    """A V2 inference; `parameters` carries Triton's `timeout` and sleepy's scalar inputs."""
    server.wait_for("READY")
    return server.client.post(V2, headers=headers or {}, json={
        "inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], "data": [text]}],
        "parameters": parameters})


def _v2_error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}, body  # V2's error shape
    return body["error"]


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
    r = _infer(plain, "v2", sleep=0.5, timeout=0)  # Triton's 0: no timeout
    assert r.status_code == 200, r.text
    error = _v2_error(_infer(plain, "v2", sleep=30, timeout=200_000), 503)
    assert error == "inference failed: prediction exceeded its deadline of 0.2 seconds"


def test_v2_inference_gets_the_server_deadline(server):
    [worker] = server.worker_pids()
    error = _v2_error(_infer(server, "slow", sleep=60), 503)
    assert error == "inference failed: prediction exceeded its deadline of 2 seconds"
    assert server.worker_pids() == [worker]  # cancelled, not killed
    r = _infer(server, "next")
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == ["NEXT"]


def test_v2_timeout_parameter_is_microseconds_and_capped(server):
    error = _v2_error(_infer(server, "short", sleep=60, timeout=300_000), 503)
    assert error == "inference failed: prediction exceeded its deadline of 0.3 seconds"
    error = _v2_error(_infer(server, "capped", sleep=60, timeout=1_000_000_000), 503)
    assert error == "inference failed: prediction exceeded its deadline of 2 seconds"
    assert _infer(server, "quick", timeout=5_000_000).status_code == 200


def test_v2_takes_the_header_too_and_the_shorter_deadline_wins(server):
    header = {"X-Prediction-Timeout": "0.3"}
    error = _v2_error(_infer(server, "header", header, sleep=60), 503)
    assert error == "inference failed: prediction exceeded its deadline of 0.3 seconds"
    error = _v2_error(_infer(server, "both", header, sleep=60, timeout=200_000), 503)
    assert error == "inference failed: prediction exceeded its deadline of 0.2 seconds"
    error = _v2_error(_infer(server, "both", header, sleep=60, timeout=1_500_000), 503)
    assert error == "inference failed: prediction exceeded its deadline of 0.3 seconds"


@pytest.mark.parametrize("value", [-1, 1.5, "1000", True, 2**64])
def test_v2_a_bad_timeout_parameter_is_refused(server, value):
    error = _v2_error(_infer(server, "x", timeout=value), 400)
    assert error.startswith("parameters.timeout must be a whole number of microseconds (0: "
                            "no timeout), not ")  # 2**64 arrives as a float


def test_v2_a_bad_header_is_refused_in_the_v2_shape(server):
    error = _v2_error(_infer(server, "x", {"X-Prediction-Timeout": "soon"}), 400)
    assert error == "X-Prediction-Timeout must be a positive number of seconds, not 'soon'"


def test_tritonclient_timeout_fails_with_503(server):
    import numpy as np
    import tritonclient.http as triton
    from tritonclient.utils import InferenceServerException

    server.wait_for("READY")
    text = triton.InferInput("text", [1], "BYTES")
    text.set_data_from_numpy(np.array([b"triton"], dtype=np.object_))
    sleep = triton.InferInput("sleep", [1], "FP64")
    sleep.set_data_from_numpy(np.array([60.0]))
    client = triton.InferenceServerClient(server.url.removeprefix("http://"))
    try:
        with pytest.raises(InferenceServerException) as caught:
            client.infer("sleepy", [text, sleep], timeout=250_000)  # microseconds
        assert caught.value.status() == "503"
        assert caught.value.message() == ("inference failed: prediction exceeded its deadline "
                                          "of 0.25 seconds")
    finally:
        client.close()
