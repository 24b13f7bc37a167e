"""Soak: a fixed number of predictions on one server, and how much it grows per 10k.

A leak shows as growth that goes on with the number of requests: resident memory of
the HTTP process and of the worker(s), open file descriptors, files left in the
server's TMPDIR. The first 10k predictions are the warm-up (allocator pools, caches,
imports settle); growth is measured from there to the end and reported per 10k
predictions. One keep-alive client sends them in sequence; one in 10 has an unknown
input key (a 422 with no prediction) and one in 10 is a PUT with an id, so refusal and
idempotent paths run too. BENCH_SOAK_COUNT sets the count (default 200k; 20k with
--quick). Run once per system, whatever --rounds says.
"""

from __future__ import annotations

import http.client
import os
import pathlib
import shutil
import tempfile
import time

from bench import systems
from bench.procs import descendants, status_kib
from bench.scenarios import Context, Figure, Scenario
from bench.systems import COGSERVE, REFERENCE, Server

STEP = 10_000


def _fds(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            total += len(os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            pass
    return total


def _files(folder: pathlib.Path) -> int:
    return sum(1 for p in folder.rglob("*") if p.is_file())


class Soak(Scenario):
    key = "soak"
    number = "10"
    title = "soak: growth per 10k predictions (no-op model)"
    model = "noop"
    systems = (COGSERVE, REFERENCE)
    restart_each_round = True
    single_round = True
    figures = (Figure("parent RSS growth per 10k", "KiB", False),
               Figure("worker RSS growth per 10k", "KiB", False),
               Figure("fd growth per 10k", "fds", False),
               Figure("temp file growth per 10k", "files", False),
               Figure("predictions", "count", True),
               Figure("unexpected responses", "count", False),
               Figure("rate", "req/s", True))

    def warmup(self, server: Server, ctx: Context) -> None:
        pass

    def count(self, ctx: Context) -> int:
        default = 20_000 if ctx.warmup_s < 2 else 200_000
        return max(2 * STEP, int(os.environ.get("BENCH_SOAK_COUNT", default)))

    def measure(self, server: Server, ctx: Context) -> dict[str, float]:
        tmp = pathlib.Path(tempfile.mkdtemp(prefix="bench-soak-"))
        started = systems.start(server.system, self.model_dir(server.system),
                                tag=f"{self.key}-{server.system}", env={"TMPDIR": str(tmp)})
        try:
            return self._soak(started, tmp, self.count(ctx))
        finally:
            started.stop()
            shutil.rmtree(tmp, ignore_errors=True)

    def _soak(self, server: Server, tmp: pathlib.Path, count: int) -> dict[str, float]:
        assert server.proc is not None
        parent = server.proc.pid
        port = int(server.url.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        plain = b'{"input":{"text":"hi"}}'
        unknown = b'{"input":{"text":"hi","nope":1}}'
        headers = {"Content-Type": "application/json"}
        samples: list[tuple[int, int, int, int]] = []
        bad = 0
        begun = time.perf_counter()
        measured_from = 0.0
        for i in range(1, count + 1):
            if i % 10 == 3:
                conn.request("POST", "/predictions", unknown, headers)
                expected = 422
            elif i % 10 == 7:
                conn.request("PUT", f"/predictions/soak-{i}", plain, headers)
                expected = 200
            else:
                conn.request("POST", "/predictions", plain, headers)
                expected = 200
            response = conn.getresponse()
            response.read()
            if response.status != expected:
                bad += 1
            if i % STEP == 0:
                workers = descendants(parent)
                samples.append((status_kib(parent, "VmRSS"),
                                sum(status_kib(p, "VmRSS") for p in workers),
                                _fds([parent, *workers]), _files(tmp)))
                if i == STEP:
                    measured_from = time.perf_counter()
        elapsed = time.perf_counter() - measured_from
        conn.close()
        del begun
        steps = len(samples) - 1
        first, last = samples[0], samples[-1]
        return {
            "parent RSS growth per 10k": (last[0] - first[0]) / steps,
            "worker RSS growth per 10k": (last[1] - first[1]) / steps,
            "fd growth per 10k": (last[2] - first[2]) / steps,
            "temp file growth per 10k": (last[3] - first[3]) / steps,
            "predictions": float(count),
            "unexpected responses": float(bad),
            "rate": (count - STEP) / elapsed if elapsed > 0 else 0.0,
        }
