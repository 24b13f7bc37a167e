"""Durable predictions (`--store`): nothing accepted is lost when the server dies.

Real processes throughout: a server is SIGKILLed with predictions finished, running and
queued and webhooks failing, then another starts on the same store (the same SQLite
file, or a Redis that a second server shares) and every id must answer, the queued one
run once, the running one end `failed` with its webhook sent, the pending webhooks
arrive. The model writes a line per run to a file, so "once" is counted, not assumed.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import sqlite3
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from harness import Server
from receiver import Receiver
from redisproc import RedisProcess

from cogserve.runtime.settings import default_store_path as default_path

ASYNC = {"Prefer": "respond-async"}
STOPPED = "the server stopped while it ran"
# retries keep going while the server is killed and restarted; the backoff stays short
HOOKS = {"COGSERVE_WEBHOOK_MAX_ATTEMPTS": "1000", "COG_THROTTLE_RESPONSE_INTERVAL": "0"}


def until(check: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"never happened: {what}")


def kill(server: Server) -> None:
    """SIGKILL the server (its worker dies with it), and reap it."""
    os.killpg(server.pid, signal.SIGKILL)
    server.process.wait(timeout=10)


def stage_in(path: pathlib.Path, prediction_id: str) -> str | None:
    """The stage a SQLite store file holds for an id (read beside the server: WAL)."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        row = db.execute("SELECT 'finished' FROM finished, json_each(finished.ids) AS i "
                         "WHERE i.value = ?1 UNION ALL "
                         "SELECT stage FROM unfinished WHERE id = ?1",
                         (prediction_id,)).fetchone()
    return row[0] if row else None


def runs(path: pathlib.Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def status_of(server: Server, prediction_id: str) -> str | None:
    r = server.client.get(f"/predictions/{prediction_id}")
    return r.json()["status"] if r.status_code == 200 else None


class Scene:
    """What a test does to the first server before it is killed, and checks after."""

    def __init__(self, tmp: pathlib.Path, ok: Receiver, failing: Receiver) -> None:
        self.runs = tmp / "runs"
        self.gate = tmp / "gate"  # never made: `running` runs until the server dies
        self.ok = ok
        self.failing = failing
        self.sync_id = ""

    def before(self, server: Server, stored: Callable[[str], bool]) -> None:
        """`stored(id)`: the store holds that finished prediction."""
        r = server.client.post("/predictions", json={"input": {"text": "sync",
                                                                "runs": str(self.runs)}})
        assert r.status_code == 200
        self.sync_id = r.json()["id"]
        # finished, its webhook refused (503) so its deliveries are still pending
        r = server.client.put("/predictions/finished", headers=ASYNC, json={
            "input": {"text": "finished", "runs": str(self.runs)},
            "webhook": self.failing.url})
        assert r.status_code == 202
        until(lambda: status_of(server, "finished") == "succeeded", "finished succeeded")
        until(lambda: len(self.failing.hits) >= 2, "the failing webhook was tried")
        # running (held by the gate) and queued behind it (one slot, --queue-size)
        r = server.client.put("/predictions/running", headers=ASYNC, json={
            "input": {"text": "running", "runs": str(self.runs), "gate": str(self.gate)},
            "webhook": self.ok.url})
        assert r.status_code == 202
        until(lambda: "running" in runs(self.runs), "the model started `running`")
        r = server.client.put("/predictions/queued", headers=ASYNC, json={
            "input": {"text": "queued", "runs": str(self.runs)}, "webhook": self.ok.url,
            "webhook_events_filter": ["completed"]})
        assert r.status_code == 202 and r.json()["status"] == "starting"
        assert server.health()["queue"]["length"] == 1
        until(lambda: self.ok.wait_until(lambda bodies: any(
            b["id"] == "running" and b["status"] == "starting" for b in bodies)),
            "the start webhook of `running`")
        # a sync prediction's record is written in a batch after its answer (a crash may
        # lose it, by design): the kill comes once it is there
        until(lambda: stored(self.sync_id), "the sync prediction in the store")

    def after(self, server: Server) -> None:
        # every id answers
        sync = server.client.get(f"/predictions/{self.sync_id}")
        assert sync.status_code == 200 and sync.json()["output"] == "done:sync"
        finished = server.client.get("/predictions/finished").json()
        assert finished["status"] == "succeeded" and finished["output"] == "done:finished"
        # the one that was running: failed, saying why, and its terminal webhook sent
        running = until(lambda: (b := server.client.get("/predictions/running").json())
                        ["status"] == "failed" and b, "`running` failed")
        assert STOPPED in running["error"] and running["output"] is None
        assert running["input"]["text"] == "running"
        bodies = self.ok.wait_until(lambda bodies: any(
            b["id"] == "running" and b["status"] == "failed" for b in bodies))
        terminal = [b for b in bodies if b["id"] == "running" and b["status"] == "failed"]
        assert STOPPED in terminal[0]["error"]
        # the queued one ran, once, and sent its (filtered) webhook
        until(lambda: status_of(server, "queued") == "succeeded", "`queued` ran")
        queued_hooks = self.ok.wait_until(lambda bodies: any(
            b["id"] == "queued" for b in bodies))
        assert [b["status"] for b in queued_hooks if b["id"] == "queued"] == ["succeeded"]
        # the webhooks pending at the kill arrive, in order
        delivered = self.failing.wait_until(lambda bodies: any(
            b["status"] == "succeeded" for b in bodies))
        statuses = [b["status"] for b in delivered if b["id"] == "finished"]
        assert statuses[-1] == "succeeded" and statuses[0] == "starting"
        # a retried PUT of a finished id answers from the store, without running it
        again = server.client.put("/predictions/finished", json={"input": {"text": "x"}})
        assert again.status_code == 200 and again.json() == finished
        assert sorted(runs(self.runs)) == ["finished", "queued", "running", "sync"]
        # and the listing knows them all
        listed = server.client.get("/predictions", params={"status": "failed"}).json()
        assert [b["id"] for b in listed["results"]] == ["running"]
        everything = server.client.get("/predictions").json()["results"]
        assert {b["id"] for b in everything} >= {"queued", "running", "finished", self.sync_id}


def test_an_async_form_too_big_to_keep_fails_after_a_restart_saying_why(serve, tmp_path):
    """A form's file becomes a data URL a third larger than its bytes: a 6.5 MB upload
    (its form under the 8 MiB a record keeps, its data URL over it) is recorded without
    its input, so the server that takes over fails it, saying why; a small one runs."""
    store, ran, gate = tmp_path / "store.sqlite3", tmp_path / "runs", tmp_path / "gate"
    args = ("--queue-size", "4", "--store", str(store))
    first = serve("durable", *args)
    r = first.client.put("/predictions/holding", headers=ASYNC, json={
        "input": {"text": "holding", "runs": str(ran), "gate": str(gate)}})
    assert r.status_code == 202
    until(lambda: "holding" in runs(ran), "the model started `holding`")
    for name, size in (("big", 6_500_000), ("small", 1_000)):
        r = first.client.put(f"/predictions/{name}", headers=ASYNC,
                             data={"text": name, "runs": str(ran)},
                             files={"data": ("blob.bin", b"\0" * size)})
        assert r.status_code == 202 and r.json()["status"] == "starting", r.text
    kill(first)
    second = serve("durable", *args)
    big = until(lambda: (b := second.client.get("/predictions/big").json())
                ["status"] == "failed" and b, "`big` failed")
    assert "too large to keep" in big["error"]
    until(lambda: status_of(second, "small") == "succeeded", "`small` ran")
    assert sorted(runs(ran)) == ["holding", "small"]


@pytest.fixture
def scene(tmp_path, receiver) -> Scene:
    return Scene(tmp_path, receiver(), receiver(fail_first=10**9))


def test_a_killed_server_restarted_on_its_store_loses_nothing_it_accepted(
        serve, scene, tmp_path):
    store = tmp_path / "store.sqlite3"
    args = ("--queue-size", "4", "--store", str(store))
    first = serve("durable", *args, env=HOOKS)
    scene.before(first, lambda prediction_id: stage_in(store, prediction_id) == "finished")
    kill(first)
    scene.failing.fail_first = 0  # the receiver is back
    second = serve("durable", *args, env=HOOKS)
    scene.after(second)


def test_the_default_store_is_found_again_by_the_same_model_folder_and_port(serve, tmp_path):
    runs_file = tmp_path / "runs"
    first = serve("durable")  # no --store: the default, a SQLite file of its own
    r = first.client.put("/predictions/kept", headers=ASYNC,
                         json={"input": {"text": "kept", "runs": str(runs_file)}})
    assert r.status_code == 202
    until(lambda: status_of(first, "kept") == "succeeded", "kept succeeded")
    # its end reaches the file a write later than the answer (the README says so): wait
    # for it there, or the kill may come first and the restart fail it as interrupted
    path = default_path(first.directory, first.port)
    until(lambda: stage_in(path, "kept") == "finished", "the finished record on disk")
    kill(first)
    other_port = serve("durable")  # another port: another store, it never meets the first
    assert other_port.client.get("/predictions/kept").status_code == 404
    again = Server("durable", "--store", "sqlite", port=first.port)  # named: the same
    try:
        assert again.client.get("/predictions/kept").json()["output"] == "done:kept"
    finally:
        again.stop()


@pytest.fixture
def redis_server() -> Iterator[RedisProcess]:
    server = RedisProcess()
    try:
        yield server
    finally:
        server.close()


def test_a_replica_takes_over_what_a_killed_one_left_in_a_shared_redis(
        serve, scene, redis_server):
    env = {**HOOKS, "COGSERVE_STORE_LEASE": "1"}
    args = ("--queue-size", "4", "--store", redis_server.url)
    first = serve("durable", *args, env=env)
    second = serve("durable", *args, env=env)
    scene.before(first, lambda prediction_id: status_of(second, prediction_id) == "succeeded")
    # the replica answers for what the first one runs and has finished
    assert status_of(second, "finished") == "succeeded"
    assert status_of(second, "running") in ("starting", "processing")
    assert second.client.put("/predictions/finished", json={"input": {}}).json()[
        "output"] == "done:finished"
    kill(first)
    scene.failing.fail_first = 0
    scene.after(second)  # once the first one's lease ran out, the second took its work


def test_redis_lost_while_serving_makes_the_server_unhealthy_until_it_is_back(
        serve, redis_server):
    server = serve("durable", "--store", redis_server.url,
                   env={"COGSERVE_STORE_LEASE": "1"})
    assert server.client.put("/predictions/before", headers=ASYNC,
                             json={"input": {}}).status_code == 202
    redis_server.stop()
    health = until(lambda: (h := server.health())["status"] == "UNHEALTHY" and h,
                   "UNHEALTHY")
    assert "prediction store" in health["store_error"]
    refused = server.client.put("/predictions/during", headers=ASYNC, json={"input": {}})
    assert refused.status_code == 503 and "store is unavailable" in refused.json()["error"]
    # a sync prediction needs no record first: it is still served
    assert server.predict(text="sync").json()["output"] == "done:sync"
    redis_server.start()
    until(lambda: server.health()["status"] == "READY", "READY again")
    assert "store_error" not in server.health()
    assert server.client.put("/predictions/after", headers=ASYNC,
                             json={"input": {}}).status_code == 202
    until(lambda: status_of(server, "after") == "succeeded", "after succeeded")


def exits_with(server: Server) -> str:
    """The output of a server that must stop at start with an error."""
    assert server.process.wait(timeout=30) == 1
    return server.output()


def test_a_store_that_cannot_be_used_stops_the_server_at_start(serve, tmp_path):
    store = tmp_path / "store.sqlite3"
    serve("durable", "--store", str(store))
    busy = exits_with(serve("durable", "--store", str(store), wait=None))
    assert "is in use by another cogserve" in busy and "--store memory" in busy
    corrupt = tmp_path / "corrupt.sqlite3"
    corrupt.write_bytes(b"not a database" * 500)
    broken = exits_with(serve("durable", "--store", str(corrupt), wait=None))
    assert "cannot be used: file is not a database" in broken and "--store memory" in broken
    newer = tmp_path / "newer.sqlite3"
    with sqlite3.connect(newer) as db:
        db.execute("PRAGMA user_version = 99")
    assert "written by a newer cogserve" in exits_with(
        serve("durable", "--store", str(newer), wait=None))
    unreachable = exits_with(serve("durable", "--store", "redis://127.0.0.1:1/0", wait=None))
    assert "cannot be reached" in unreachable and "--store memory" in unreachable
    # the way out works, and keeps nothing
    memory = serve("durable", "--store", "memory")
    assert memory.predict(text="m").json()["output"] == "done:m"


def test_listing_pages_newest_first_and_refuses_what_it_cannot_read(serve):
    server = serve("durable", "--store", "memory")
    made = [server.client.put(f"/predictions/l{i}", json={"input": {"text": str(i)}}).json()
            for i in range(5)]
    assert all(b["status"] == "succeeded" for b in made)
    seen: list[str] = []
    url: str | None = "/predictions?limit=2"
    while url is not None:
        page = server.client.get(url).json()
        seen += [b["id"] for b in page["results"]]
        url = page["next"]
    assert seen == ["l4", "l3", "l2", "l1", "l0"]
    assert server.client.get("/predictions?status=failed").json() == {"results": [],
                                                                       "next": None}
    for bad in ("status=done", "limit=0", "limit=x", "cursor=nonsense"):
        r = server.client.get(f"/predictions?{bad}")
        assert r.status_code == 400 and r.json()["error"], bad
    assert server.health()["status"] == "READY"
