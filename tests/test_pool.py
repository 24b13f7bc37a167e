"""Worker pools (--workers N, --gpus): parallel sync predictions, routing, replacement.

One server with two workers (CUDA_VISIBLE_DEVICES 0 and 1) is shared by the module.
"""

from __future__ import annotations

import os
import pathlib
import signal
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from harness import Server


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with Server("gated", "--workers", "2", "--gpus", "0,1") as srv:
        yield srv


def _ready(server: Server) -> list[dict]:
    """Wait until both workers are READY; their health entries."""
    limit = time.monotonic() + 30
    while True:
        workers = server.health()["workers"]
        if all(w["status"] == "READY" for w in workers):
            return workers
        assert time.monotonic() < limit, workers
        time.sleep(0.02)


def _journal(path: pathlib.Path, count: int) -> dict[str, int]:
    """Wait until `count` predictions have started; text -> worker pid."""
    limit = time.monotonic() + 30
    while True:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count:
            return {text: int(pid) for text, pid in (line.split() for line in lines)}
        assert time.monotonic() < limit, lines
        time.sleep(0.01)


def _in_threads(server: Server, inputs: list[dict]) -> tuple[list[threading.Thread], dict]:
    results: dict[str, httpx.Response] = {}

    def call(body: dict) -> None:
        results[body["text"]] = server.client.post("/predictions", json={"input": body})

    threads = [threading.Thread(target=call, args=(body,)) for body in inputs]
    for thread in threads:
        thread.start()
    return threads, results


def test_two_workers_each_ran_setup_and_report_in_health(server):
    workers = _ready(server)
    assert [w["id"] for w in workers] == [0, 1]
    assert len({w["pid"] for w in workers}) == 2
    assert server.health()["status"] == "READY"
    # setup() ran once in each, and its lines say which worker (a replacement's setup,
    # if another test killed one, goes to the server log instead)
    logs = server.health()["setup"]["logs"].splitlines()
    assert sorted(line.rsplit(" ", 1)[0] for line in logs) == [
        "[worker 0] setting up gated in", "[worker 1] setting up gated in"]


def test_two_sync_predictions_run_at_once_on_different_workers(server, tmp_path):
    _ready(server)
    gate, journal = tmp_path / "gate", tmp_path / "journal"
    threads, results = _in_threads(server, [
        {"text": t, "gate": str(gate), "journal": str(journal)} for t in ("a", "b")])
    started = _journal(journal, 2)  # both are inside run() while neither can finish
    assert server.health()["status"] == "BUSY"
    gate.touch()
    for thread in threads:
        thread.join(timeout=30)
    outputs = {t: dict(part.split("=") for part in results[t].json()["output"].split()[1:])
               for t in ("a", "b")}
    assert started["a"] != started["b"]  # least loaded: one prediction per worker
    assert {o["gpu"] for o in outputs.values()} == {"0", "1"}  # --gpus round-robin
    # measured by the model: each started before the other ended
    a, b = outputs["a"], outputs["b"]
    assert float(a["start"]) < float(b["end"]) and float(b["start"]) < float(a["end"])


def test_a_killed_worker_fails_only_its_prediction_and_is_replaced(server, tmp_path):
    before = {w["id"]: w["pid"] for w in _ready(server)}
    gate, journal = tmp_path / "gate", tmp_path / "journal"
    threads, results = _in_threads(server, [
        {"text": t, "gate": str(gate), "journal": str(journal)} for t in ("victim", "other")])
    started = _journal(journal, 2)
    os.kill(started["victim"], signal.SIGKILL)
    limit = time.monotonic() + 30
    while "victim" not in results:
        assert time.monotonic() < limit
        time.sleep(0.01)
    victim = results["victim"].json()
    assert victim["status"] == "failed"
    assert victim["error"] == "prediction failed: the worker process was killed by SIGKILL"
    doc = server.health()  # the other worker is still serving while one is down
    assert doc["status"] in ("READY", "BUSY")
    gate.touch()
    for thread in threads:
        thread.join(timeout=30)
    assert results["other"].json()["status"] == "succeeded"
    after = {w["id"]: w["pid"] for w in _ready(server)}  # back to two, setup ran again
    assert len(after) == 2
    changed = [i for i in after if after[i] != before[i]]
    assert len(changed) == 1 and before[changed[0]] == started["victim"]
    assert f"worker {changed[0]} (pid {started['victim']})" in server.output()
    assert f"[worker {changed[0]}] setting up gated in {after[changed[0]]}" in server.output()
    assert server.predict(text="after").json()["status"] == "succeeded"


def test_defunct_only_when_no_worker_can_serve(serve):
    single = serve("sleepy", "--workers", "1")
    assert "workers" not in single.health()  # one worker: Cog's document
    r = single.predict(crash="kill")
    assert r.json()["status"] == "failed"
    assert single.wait_for("DEFUNCT")["status"] == "DEFUNCT"  # one worker: as Cog does
