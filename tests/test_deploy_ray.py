"""`cogserve ray --replicas 2` on a local single-node Ray cluster started by this module.

One cluster for the module's tests (Ray takes tens of seconds to start on 2 cores); the
tests talk HTTP to Ray's proxy. The worker-kill test breaks a replica: until Ray has
replaced it, and the ingress has stopped sending to it, a test that came after could meet
the dead one. So it is marked `breaks_shared` and runs after the module's other tests,
whatever their order (tests/conftest.py); it used to get a cluster of its own, the
module's second (20 s more on 2 busy cores).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import httpx
import pytest
from harness import MODELS, claim_port, free_port
from receiver import Receiver

from cogserve.deploy.ray_routing import TAG_LENGTH

pytest.importorskip("ray.serve", reason="Ray Serve is installed by the test extra")

START_TIMEOUT = 180  # a cold Ray on 2 busy cores


def replica_port_range() -> dict[str, str]:
    """A range of 20 ports for the replicas' direct-ingress servers, free when chosen."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            low = probe.getsockname()[1]
        if (low + 20 < 65535 and all(_free(low + k) for k in range(20))
                and all(claim_port(low + k) for k in range(20))):
            return {"RAY_SERVE_DIRECT_INGRESS_MIN_HTTP_PORT": str(low),
                    "RAY_SERVE_DIRECT_INGRESS_MAX_HTTP_PORT": str(low + 20)}


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


class RayServer:
    def __init__(self, model: pathlib.Path, replicas: int, ingress: str = "proxy") -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # Ray keeps sockets and logs in TMPDIR; a short path of its own (sockets have a
        # 107-byte limit), removed with the cluster
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
        self.log = (self.tmp / "server.log").open("wb")
        env = {**os.environ, "TMPDIR": str(self.tmp), "RAY_TMPDIR": str(self.tmp),
               "LOG_FORMAT": "console",
               # HAProxy's stats and metrics ports (fixed at 8404 and 9101 by default) and
               # the replicas' own (30000 up): a cluster of another test run cannot be
               # given a port this one's HAProxy sends to
               "RAY_SERVE_HAPROXY_STATS_PORT": str(free_port()),
               "RAY_SERVE_HAPROXY_METRICS_PORT": str(free_port()),
               **replica_port_range()}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cogserve.cli", "ray", str(model), "--replicas",
             str(replicas), "--host", "127.0.0.1", "--port", str(self.port),
             "--num-cpus", "0.5", "--health-check-period", "1", "--ingress", ingress],
            stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.client = httpx.Client(base_url=self.url, timeout=60)

    def output(self, around: str | None = None) -> str:
        """The log's end, or the part from the first `around` on (when it is there)."""
        text = (self.tmp / "server.log").read_text(errors="replace")
        start = text.find(around) if around else -1
        return text[start:start + 5000] if start >= 0 else text[-5000:]

    def wait_ready(self) -> None:
        """Until every replica is up (`cogserve ray` says "serving on" once Ray's serve.run
        returns; behind HAProxy the first replica answers before the second has started)
        and the model answers READY."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.output()
            if b"serving on http" not in (self.tmp / "server.log").read_bytes():
                time.sleep(0.5)
                continue
            try:
                if self.client.get("/health-check").json()["status"] == "READY":
                    return
            except (httpx.HTTPError, ValueError, KeyError):
                pass
            time.sleep(0.5)
        raise AssertionError(f"Ray never served READY\n{self.output()}")

    def workers(self) -> list[int]:
        """pids of the cogserve workers of this cluster's replicas."""
        found = []
        for entry in pathlib.Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmd = (entry / "cmdline").read_bytes().split(b"\0")
                environ = (entry / "environ").read_bytes()
                state = (entry / "stat").read_text().split()[2]
            except OSError:
                continue
            if (b"cogserve.worker" in cmd and f"RAY_TMPDIR={self.tmp}".encode() in environ
                    and state != "Z"):
                found.append(int(entry.name))
        return found

    def stop(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # serve.shutdown(), ray.shutdown()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # whatever Ray left in the group
        except ProcessLookupError:
            pass
        for pid in self.workers():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait(timeout=10)
        self.log.close()
        text = (self.tmp / "server.log").read_text(errors="replace")
        self.final_output = text[text.find("shutting down"):]  # what the shutdown said
        shutil.rmtree(self.tmp, ignore_errors=True)


def running(ingress: str) -> Iterator[RayServer]:
    """A 2-replica cluster for a module's tests (tests/test_deploy_ray_haproxy.py runs
    these tests again behind Ray's HAProxy)."""
    server = RayServer(MODELS / "stream", replicas=2, ingress=ingress)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()
    # Ray's serve.shutdown() waits 30 s for its controller, then says so: the replicas must
    # have stopped before that (behind HAProxy they used to sit out Ray's 30 s window)
    assert "failed to shut down" not in server.final_output, server.final_output


@pytest.fixture(scope="module")
def ray_server() -> Iterator[RayServer]:
    yield from running("proxy")


def test_both_apis_work_through_rays_proxy(ray_server):
    c = ray_server.client
    r = c.post("/predictions", json={"input": {"n": 3}})
    assert r.status_code == 200 and r.json()["output"] == ["tok0", "tok1", "tok2"]
    with c.stream("POST", "/predictions", json={"input": {"n": 2}},
                  headers={"Accept": "text/event-stream"}) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        body = "".join(stream.iter_text())
    assert body.count("event: output") == 2 and "event: completed" in body
    r = c.post("/v2/models/stream/infer", json={"inputs": [
        {"name": "n", "datatype": "INT64", "shape": [1], "data": [2]}]})
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == ["tok0", "tok1"]
    assert c.get("/v2/health/ready").json() == {"ready": True}


def test_a_client_that_goes_away_cancels_its_sync_prediction_through_the_proxy(ray_server):
    c = ray_server.client
    ident = f"gone-{time.monotonic_ns()}"
    body = b'{"input": {"n": 400, "delay": 0.05}}'
    sock = socket.create_connection(("127.0.0.1", ray_server.port))
    try:
        sock.sendall(f"PUT /predictions/{ident} HTTP/1.1\r\nHost: x\r\nContent-Type: "
                     f"application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        deadline = time.monotonic() + 30
        while c.get(f"/predictions/{ident}").json().get("status") != "processing":
            assert time.monotonic() < deadline, "the prediction never started"
            time.sleep(0.05)
    finally:
        sock.close()
    deadline = time.monotonic() + 30
    while (state := c.get(f"/predictions/{ident}").json())["status"] != "canceled":
        assert time.monotonic() < deadline, state
        time.sleep(0.05)


def test_async_with_webhook_and_generated_ids_find_their_replica(ray_server):
    c = ray_server.client
    receiver = Receiver()
    try:
        ids = []
        for _ in range(6):
            r = c.post("/predictions", json={"input": {"n": 2}, "webhook": receiver.url},
                       headers={"Prefer": "respond-async"})
            assert r.status_code == 202
            ids.append(r.json()["id"])
        receiver.wait_until(lambda bodies: {b["id"] for b in bodies
                                            if b["status"] == "succeeded"} == set(ids))
        # each id names its replica: GET finds it every time (a random replica: 1 in 2)
        for ident in ids:
            for _ in range(4):
                r = c.get(f"/predictions/{ident}")
                assert r.status_code == 200 and r.json()["output"] == ["tok0", "tok1"]
    finally:
        receiver.close()


def test_cancel_and_repeated_put_reach_the_replica_that_holds_the_prediction(ray_server):
    c = ray_server.client
    async_ = {"Prefer": "respond-async"}
    body = {"input": {"n": 400, "delay": 0.05}}
    for k in range(3):  # one at a time: each replica has one slot (a sync model)
        ident = f"client-chosen-{k}-{time.monotonic_ns()}"
        r = c.put(f"/predictions/{ident}", json=body, headers=async_)
        assert r.status_code == 202, r.text
        created = r.json()["created_at"]
        for _ in range(3):  # the running prediction answers, on its replica, not a new one
            r = c.put(f"/predictions/{ident}", json=body, headers=async_)
            assert r.status_code == 202, r.text
            assert r.json()["created_at"] == created
        r = c.post(f"/predictions/{ident}/cancel")
        assert r.status_code == 200, r.text  # elsewhere: 404, unknown id
        deadline = time.monotonic() + 30
        while (state := c.get(f"/predictions/{ident}").json())["status"] != "canceled":
            assert time.monotonic() < deadline, state
            time.sleep(0.05)
        assert len(state["output"]) < 400


@pytest.mark.breaks_shared  # after the module's other tests: they need both replicas whole
def test_killing_one_replicas_worker_leaves_the_other_serving_and_ray_replaces_it(ray_server):
    c = ray_server.client
    before = ray_server.workers()
    assert len(before) == 2, before
    # a replica's generated ids start with its tag: the tags of both replicas, seen before
    # the kill, tell an answer of the surviving one from one of the replacement
    tags = set()
    deadline = time.monotonic() + 60
    while len(tags) < 2:  # requests go to a random replica: until each has answered
        r = c.post("/predictions", json={"input": {"n": 1}})
        assert r.status_code == 200, r.text
        tags.add(r.json()["id"][:TAG_LENGTH])
        assert time.monotonic() < deadline, tags
    os.kill(before[0], signal.SIGKILL)
    by_survivor = 0
    deadline = time.monotonic() + 120
    while True:  # until Ray has started a new replica, and the other one has served
        r = c.post("/predictions", json={"input": {"n": 1}})
        # the dead replica answers 503 until Ray's health check replaces it (or 200
        # failed for a prediction sent to it as its worker died); never 500
        assert r.status_code in (200, 503), f"{r.text}\n{ray_server.output('unhandled')}"
        if r.status_code == 200 and r.json()["status"] == "succeeded":
            by_survivor += r.json()["id"][:TAG_LENGTH] in tags  # the dead one cannot succeed
        now = ray_server.workers()
        if len(now) == 2 and before[0] not in now and before[1] in now and by_survivor:
            break
        assert time.monotonic() < deadline, (f"not replaced: {now}, {by_survivor} served by "
                                             f"the other replica\n{ray_server.output()}")
        time.sleep(0.2)
    ray_server.wait_ready()
    for _ in range(10):
        r = c.post("/predictions", json={"input": {"n": 1}})
        assert r.status_code == 200 and r.json()["output"] == ["tok0"], r.text


@pytest.mark.parametrize(("flags", "message"), [
    (["--replicas", "0"], "error: --replicas must be at least 1"),
    (["--autoscaling", "[1]"], "error: --autoscaling must be a JSON object"),
    (["--autoscaling", "{nope"], "error: --autoscaling is not JSON"),
])
def test_bad_ray_flags_are_clear_errors_before_ray_starts(flags, message):
    result = subprocess.run([sys.executable, "-m", "cogserve.cli", "ray", str(MODELS / "stream"),
                             *flags], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert message in result.stderr
