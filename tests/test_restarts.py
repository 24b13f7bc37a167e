"""A prediction that arrives while the worker is being replaced.

Once the server has served, a worker on its way back (restarted after a run() ignored
its cancel, replaced after a SIGKILL in a pool) is a slot that is not free yet, not a
server that is not ready: without a queue the answer is Cog's 409 (what the reference
answers while a run() that ignores its cancel holds the slot), with `--queue-size` the
prediction waits for the new worker. Health says STARTING meanwhile. The model's
setup() waits while a hold file exists, so the restart window stays open until the
test closes it: no timing assumptions.
"""

from __future__ import annotations

import os
import pathlib
import signal
import threading
import time

import httpx
from harness import Server, write_model

MODEL = '''
import os
import time

from cog import BaseRunner


class Runner(BaseRunner):
    def setup(self) -> None:
        while os.path.exists(os.environ["SETUP_HOLD"]):  # the test holds a restart here
            time.sleep(0.01)

    def run(self, text: str = "x", stubborn: bool = False) -> str:
        print(f"start {text}")
        limit = time.monotonic() + (60 if stubborn else 0)
        while time.monotonic() < limit:  # ignores every cancel
            try:
                time.sleep(0.05)
            except BaseException:
                print("ignored a cancel")
        return f"{text} {os.getpid()}"
'''
BUSY = "At capacity - all prediction slots busy"
V2 = "/v2/models/restarts/infer"


def _model(tmp: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    return write_model(tmp / "restarts", MODEL), tmp / "hold"


def _v2(server: Server, text: str) -> httpx.Response:
    return server.client.post(V2, json={"inputs": [
        {"name": "text", "datatype": "BYTES", "shape": [1], "data": [text]}]})


def _until(condition, what: str):
    limit = time.monotonic() + 30
    while not (value := condition()):
        assert time.monotonic() < limit, what
        time.sleep(0.02)
    return value


def _all_workers_ready(server: Server, count: int) -> list[int]:
    _until(lambda: [w["status"] for w in server.health()["workers"]] == ["READY"] * count,
           "the workers never became ready")
    return server.worker_pids()


def _kill_every_worker(server: Server, count: int, hold: pathlib.Path) -> list[int]:
    """Once all are ready, hold the next setups and SIGKILL each worker by pid; wait until
    the server says STARTING (every worker is being replaced)."""
    pids = _all_workers_ready(server, count)
    assert len(pids) == count
    hold.touch()
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    server.wait_for("STARTING")
    return pids


def _refused_as_busy(server: Server) -> None:
    cog = server.predict(text="during")
    assert cog.status_code == 409, cog.text
    assert cog.json()["error"] == BUSY
    v2 = _v2(server, "during")
    assert v2.status_code == 409, v2.text
    assert v2.json() == {"error": BUSY}
    assert server.health()["status"] == "STARTING"  # still replacing: not READY


def test_a_worker_restarted_after_an_ignored_cancel_answers_409_not_503(serve, tmp_path):
    model, hold = _model(tmp_path)
    server = serve(model, env={"SETUP_HOLD": str(hold), "COGSERVE_CANCEL_TIMEOUT": "0.5"})
    [first] = server.worker_pids()
    hold.touch()  # the replacement's setup() waits until the test removes it
    r = server.client.put("/predictions/stubborn", headers={"Prefer": "respond-async"},
                          json={"input": {"text": "stubborn", "stubborn": True}})
    assert r.status_code == 202, r.text
    _until(lambda: server.client.get("/predictions/stubborn").json()["status"] == "processing",
           "the stubborn prediction never started")
    canceled = server.client.post("/predictions/stubborn/cancel").json()
    assert canceled["status"] == "canceled" and "ignored a cancel" in canceled["logs"]
    _until(lambda: server.worker_pids() not in ([], [first]), "no new worker was started")
    _refused_as_busy(server)
    hold.unlink()
    server.wait_for("READY")
    after = server.predict(text="after").json()
    assert after["status"] == "succeeded"
    assert after["output"] == f"after {server.worker_pids()[0]}"


def test_a_pool_whose_workers_were_killed_answers_409_until_one_is_back(serve, tmp_path):
    model, hold = _model(tmp_path)
    server = serve(model, "--workers", "2", env={"SETUP_HOLD": str(hold)})
    _kill_every_worker(server, 2, hold)
    _refused_as_busy(server)
    hold.unlink()
    _all_workers_ready(server, 2)
    assert server.predict(text="after").json()["status"] == "succeeded"


def test_with_a_queue_predictions_wait_for_the_replacement(serve, tmp_path):
    model, hold = _model(tmp_path)
    server = serve(model, "--workers", "2", "--queue-size", "4",
                   env={"SETUP_HOLD": str(hold)})
    killed = _kill_every_worker(server, 2, hold)
    results: dict[str, httpx.Response] = {}
    calls = {"cog": lambda: server.predict(text="cog"), "v2": lambda: _v2(server, "v2")}
    threads = [threading.Thread(target=lambda k=k, f=f: results.setdefault(k, f()))
               for k, f in calls.items()]
    for thread in threads:
        thread.start()
    queued = server.client.put("/predictions/queued", headers={"Prefer": "respond-async"},
                               json={"input": {"text": "queued"}})
    assert queued.status_code == 202 and queued.json()["status"] == "starting"
    _until(lambda: server.health()["queue"]["length"] == 3, "the predictions never queued")
    assert server.health()["status"] == "STARTING"
    assert results == {}  # nothing answered while no worker can run them
    hold.unlink()
    for thread in threads:
        thread.join(timeout=30)
    replacements = _all_workers_ready(server, 2)
    assert set(replacements).isdisjoint(killed)
    cog = results["cog"].json()
    assert cog["status"] == "succeeded", cog
    assert int(cog["output"].split()[1]) in replacements
    v2 = results["v2"]
    assert v2.status_code == 200, v2.text
    assert int(v2.json()["outputs"][0]["data"][0].split()[1]) in replacements
    done = _until(lambda: (b := server.client.get("/predictions/queued").json())["status"]
                  == "succeeded" and b, "the queued prediction never ran")
    assert int(done["output"].split()[1]) in replacements
