"""Graceful shutdown is bounded: predictions get COGSERVE_DRAIN_TIMEOUT, are then
canceled, and failed if they ignore the cancel; every one still gets its answer."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

DRAIN = {"COGSERVE_DRAIN_TIMEOUT": "1", "COGSERVE_CANCEL_TIMEOUT": "1"}
# drain 1 s + cancel 1 s + the webhook drain (10 s at most) + process start/stop
EXIT_BOUND = 20.0


def _term_and_wait(server) -> int:
    os.kill(server.pid, signal.SIGTERM)
    try:
        return server.process.wait(timeout=EXIT_BOUND)
    except subprocess.TimeoutExpired:
        pytest.fail(f"SIGTERM did not end the server within {EXIT_BOUND:g} s")


@pytest.mark.parametrize("inputs,status", [
    ({"sleep": 60}, "canceled"),  # honours the cancel that follows the drain timeout
    ({"sleep": 60, "swallow": True}, "failed"),  # ignores it: failed, worker killed
])
def test_a_long_prediction_does_not_hold_sigterm(serve, receiver, inputs, status):
    server = serve("sleepy", env=DRAIN)
    hook = receiver()
    r = server.client.post("/predictions", headers={"Prefer": "respond-async"},
                           json={"input": {"text": "long", **inputs}, "webhook": hook.url})
    assert r.status_code == 202
    hook.wait_until(lambda bodies: any("start long" in b["logs"] for b in bodies))
    assert _term_and_wait(server) == 0
    final = hook.wait_for_terminal(timeout=5)[-1]
    assert final["status"] == status, final
    if status == "failed":
        assert "shut down before it finished" in final["error"]
