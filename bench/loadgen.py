"""Load generators: wrk for request rates, lean http.client code for single requests.

wrk (C, Debian's package) drives every req/s figure, so the client costs the same for
every system and never becomes the bottleneck of a Python server. Streams, large
responses and cold starts need a per-request clock that wrk lacks; those use
http.client from the standard library, one request at a time.
"""

from __future__ import annotations

import http.client
import json
import os
import pathlib
import subprocess
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

LUA = pathlib.Path(__file__).resolve().parent / "wrk.lua"


class LoadError(RuntimeError):
    pass


@dataclass
class WrkResult:
    requests: int
    seconds: float
    ok: int           # 2xx responses
    conflicts: int    # 409 responses
    other: int        # any other status
    socket_errors: int
    p50_ms: float
    p99_ms: float

    @property
    def ok_per_s(self) -> float:
        return self.ok / self.seconds if self.seconds else 0.0

    @property
    def non_2xx(self) -> int:
        return self.conflicts + self.other


def wrk(binary: str, url: str, *, connections: int, seconds: float,
        body: pathlib.Path | None = None, headers: dict[str, str] | None = None,
        method: str = "POST", timeout_s: float = 30.0) -> WrkResult:
    """One wrk run (one thread: the machine has two cores and the server needs one)."""
    env = dict(os.environ)
    env["BENCH_METHOD"] = method
    env["BENCH_BODY_FILE"] = str(body) if body else ""
    env["BENCH_HEADERS"] = "\n".join(f"{k}: {v}" for k, v in (headers or {}).items())
    env["BENCH_COUNT_STATUS"] = "1"
    argv = [binary, "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s",
            f"--timeout={timeout_s:g}s", "-s", str(LUA), url]
    done = subprocess.run(argv, capture_output=True, text=True, env=env,
                          timeout=seconds + timeout_s + 30)
    line = next((x for x in done.stdout.splitlines() if x.startswith("BENCHJSON ")), None)
    if done.returncode != 0 or line is None:
        raise LoadError(f"wrk exited {done.returncode}: {(done.stderr or done.stdout)[-300:]}")
    data = json.loads(line.removeprefix("BENCHJSON "))
    socket_errors = sum(data[k] for k in ("connect_errors", "read_errors", "write_errors",
                                          "timeouts"))
    return WrkResult(
        requests=data["requests"], seconds=data["duration_us"] / 1e6, ok=data["ok_2xx"],
        conflicts=data["st_409"], other=data["st_other"], socket_errors=socket_errors,
        p50_ms=data["p50_us"] / 1000, p99_ms=data["p99_us"] / 1000,
    )


def _connection(url: str, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return conn, path


@dataclass
class Timed:
    status: int
    seconds: float
    body: bytes


def request(url: str, *, method: str = "POST", body: bytes | None = None,
            headers: dict[str, str] | None = None, timeout: float = 120.0) -> Timed:
    """One request on a fresh connection, timed from send to the last byte read."""
    conn, path = _connection(url, timeout)
    try:
        conn.connect()
        start = time.perf_counter()
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        return Timed(resp.status, time.perf_counter() - start, data)
    finally:
        conn.close()


@dataclass
class StreamTimes:
    status: int
    tokens: int
    first_token_s: float
    total_s: float
    completed: bool


def sse(url: str, body: bytes, *, timeout: float = 120.0, marker: bytes = b"event: output",
        end: bytes = b"event: completed") -> StreamTimes:
    """POST with Accept: text/event-stream; count `marker` (Cog's `output` events) as
    they arrive, until `end` (OpenAI's chunks: their `delta.content`, then `[DONE]`)."""
    conn, path = _connection(url, timeout)
    try:
        conn.connect()
        start = time.perf_counter()
        conn.request("POST", path, body=body, headers={
            "Content-Type": "application/json", "Accept": "text/event-stream"})
        resp = conn.getresponse()
        if resp.status != 200:
            return StreamTimes(resp.status, 0, 0.0, time.perf_counter() - start, False)
        tokens = 0
        first = 0.0
        tail = b""
        completed = False
        while True:
            chunk = resp.read1(65536)
            if not chunk:
                break
            window = tail + chunk
            found = window.count(marker)
            if found and not tokens:
                first = time.perf_counter() - start
            tokens += found
            if end in window:
                completed = True
            # keep a tail shorter than the marker so no event is counted twice
            tail = window[-(len(marker) - 1):]
        return StreamTimes(200, tokens, first, time.perf_counter() - start, completed)
    finally:
        conn.close()


def wait_http(url: str, *, ready: Callable[[int, bytes], bool], timeout: float,
              alive: Callable[[], bool], poll: float = 0.01) -> float:
    """Poll `url` (GET) until `ready(status, body)`; return seconds waited."""
    start = time.perf_counter()
    deadline = start + timeout
    while time.perf_counter() < deadline:
        if not alive():
            raise LoadError("server exited before it was ready")
        try:
            got = request(url, method="GET", timeout=2.0)
            if ready(got.status, got.body):
                return time.perf_counter() - start
        except OSError:
            pass
        time.sleep(poll)
    raise LoadError(f"not ready after {timeout:g} s")


def batch_totals(base_url: str) -> tuple[float, float] | None:
    """cogserve's `cogserve_batch_size` histogram so far at `base_url` (its sum and count):
    how its batches formed; None for a server without it (LitServe, the reference, a model
    without @batch)."""
    try:
        got = request(base_url + "/metrics", method="GET", timeout=10)
    except OSError:
        return None
    if got.status != 200:
        return None
    totals = {}
    for line in got.body.decode(errors="replace").splitlines():
        name, _, value = line.partition(" ")
        if name in ("cogserve_batch_size_sum", "cogserve_batch_size_count"):
            totals[name] = float(value)
    if len(totals) != 2:
        return None
    return totals["cogserve_batch_size_sum"], totals["cogserve_batch_size_count"]


def mean_batch(before: tuple[float, float] | None,
               after: tuple[float, float] | None) -> float | None:
    """The mean size of the batches formed between two `batch_totals` readings."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])

