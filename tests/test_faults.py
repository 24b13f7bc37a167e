"""Faults with a mix of work in flight: every prediction gets an answer, nothing hangs
past its bound, and no slot, process, file descriptor or temporary file is left.

In flight at once on an async streaming model with 8 slots (each run blocks on a gate
file): sync requests, async requests with webhooks to a good receiver, to one that
hangs, to one that answers 500, to a refused port and to a name that does not resolve,
an SSE stream, and clients that disconnect mid-request, mid-upload and mid-stream. Then
the worker is SIGKILLed, or the server gets SIGTERM.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from typing import Any

import httpx
import pytest
from harness import free_port

SLOTS = {"COG_MAX_CONCURRENCY": "12", "COGSERVE_DRAIN_TIMEOUT": "1",
         "COGSERVE_CANCEL_TIMEOUT": "1", "COGSERVE_WEBHOOK_TIMEOUT": "1",
         "COGSERVE_WEBHOOK_MAX_ATTEMPTS": "2"}
EXIT_BOUND = 25.0  # drain 1 s + cancel 1 s + webhook drain (10 s at most) + start/stop
ASYNC = {"Prefer": "respond-async"}


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class Load:
    """Starts the mix of requests; collects what each client got."""

    def __init__(self, server: Any, receiver: Any, gate: str) -> None:
        self.server = server
        self.gate = gate
        self.results: dict[str, Any] = {}
        self.threads: list[threading.Thread] = []
        self.good = receiver()
        self.hanging = receiver(hang=True)
        self.failing = receiver(fail_first=100, fail_status=500)
        self.refused = f"http://127.0.0.1:{free_port()}/hook"

    def _thread(self, name: str, target: Any) -> None:
        def run() -> None:
            try:
                self.results[name] = target()
            except Exception as exc:  # noqa: BLE001 - recorded, asserted by the test
                self.results[name] = exc

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self.threads.append(thread)

    def _input(self) -> dict[str, Any]:
        return {"n": 3, "gate": self.gate}

    def start(self) -> None:
        client = self.server.client
        for i in range(2):
            self._thread(f"sync{i}", lambda i=i: client.post(
                "/predictions", json={"id": f"sync{i}", "input": self._input()}, timeout=60))
        hooks = {"good": self.good.url, "hanging": self.hanging.url,
                 "failing": self.failing.url, "refused": self.refused,
                 "unresolvable": "http://no-such-host.invalid/hook"}
        for name, url in hooks.items():
            r = client.post("/predictions", headers=ASYNC, json={
                "id": f"hook-{name}", "input": self._input(), "webhook": url})
            assert r.status_code == 202, r.text
        self._thread("sse", self._sse)
        self._disconnecting_clients()

    def _sse(self) -> list[str]:
        events = []
        with httpx.stream("POST", self.server.url + "/predictions", timeout=60,
                          headers={"Accept": "text/event-stream"},
                          json={"id": "sse", "input": self._input()}) as response:
            for line in response.iter_lines():
                if line.startswith("event: "):
                    events.append(line[7:])
        return events

    def _disconnecting_clients(self) -> None:
        port = self.server.port
        body = b'{"input":{"n":3,"gate":"' + self.gate.encode() + b'"}}'
        head = (b"POST /predictions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n" % len(body))
        # mid-request: the whole request, then gone before the answer
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(head + b"\r\n" + body)
            time.sleep(0.1)
        # mid-upload: half the body, then gone
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(head + b"\r\n" + body[: len(body) // 2])
        # mid-stream: an SSE stream read a little, then dropped
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(head.replace(b"Host: x", b"Host: x\r\nAccept: text/event-stream")
                         + b"\r\n" + body)
            sock.recv(100)

    def wait_running(self) -> None:
        """Until every prediction of the mix has started its run()."""
        ids = ["sync0", "sync1", "sse", *(f"hook-{n}" for n in
                                          ("good", "hanging", "failing", "refused",
                                           "unresolvable"))]
        deadline = time.monotonic() + 20
        while ids and time.monotonic() < deadline:
            r = self.server.client.get(f"/predictions/{ids[0]}")
            if r.status_code == 200 and "async log 0" in r.json()["logs"]:
                ids.pop(0)
            else:
                time.sleep(0.05)
        assert not ids, f"never started: {ids}"

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.1, deadline - time.monotonic()))
        assert not any(t.is_alive() for t in self.threads), "a client never got its answer"


@pytest.fixture
def gate(tmp_path) -> str:
    return str(tmp_path / "gate")  # never created: every run() blocks until the fault


def _check_answers(load: Load, reason: str) -> None:
    for name in ("sync0", "sync1"):
        response = load.results[name]
        assert isinstance(response, httpx.Response), response
        body = response.json()
        assert body["status"] in ("failed", "canceled"), body
        if body["status"] == "failed":
            assert reason in body["error"], body
    events = load.results["sse"]
    assert isinstance(events, list) and events[-1] == "completed", events
    final = load.good.wait_for_terminal(timeout=15)[-1]
    assert final["status"] in ("failed", "canceled"), final
    for receiver in (load.hanging, load.failing):  # tried, and given up within bounds
        assert receiver.hits, "the bad receiver was never tried"


def test_sigkill_of_the_worker_answers_everything_in_flight(serve, receiver, gate):
    server = serve("stream_async", env=SLOTS)
    fds_before = _fds(server.pid)
    load = Load(server, receiver, gate)
    load.start()
    load.wait_running()
    [worker] = server.worker_pids()
    os.kill(worker, signal.SIGKILL)
    load.join(timeout=20)
    _check_answers(load, "killed by SIGKILL")
    assert server.wait_for("DEFUNCT")["status"] == "DEFUNCT"
    for name in ("hanging", "failing", "refused", "unresolvable"):
        final = server.client.get(f"/predictions/hook-{name}").json()
        assert final["status"] == "failed" and "SIGKILL" in final["error"], final
    assert server.worker_pids() == []
    assert [p for p in server.own_tmp.rglob("*") if p.is_file()] == []
    # the dead worker's sockets and pipes are closed; once idle keep-alive connections
    # have timed out (5 s), nothing else stays open
    deadline = time.monotonic() + 15
    while _fds(server.pid) > fds_before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _fds(server.pid) <= fds_before
    os.kill(server.pid, signal.SIGTERM)
    assert server.process.wait(timeout=EXIT_BOUND) == 0


def test_sigterm_answers_everything_in_flight_within_its_bound(serve, receiver, gate):
    server = serve("stream_async", env=SLOTS)
    load = Load(server, receiver, gate)
    load.start()
    load.wait_running()
    [worker] = server.worker_pids()
    os.kill(server.pid, signal.SIGTERM)
    try:
        code = server.process.wait(timeout=EXIT_BOUND)
    except subprocess.TimeoutExpired:
        pytest.fail(f"SIGTERM took longer than {EXIT_BOUND:g} s")
    assert code == 0
    load.join(timeout=10)
    _check_answers(load, "shut down")
    assert not os.path.exists(f"/proc/{worker}") or \
        open(f"/proc/{worker}/stat").read().split(")")[1].split()[0] == "Z"
    # harness: a server that exited 0 must have removed every temporary file
