"""What the prediction store costs scenario 1 (sync no-op, 1 sequential client), per store.

Three cogserve servers of this checkout on `bench/models/noop`: `--store memory` (what
cogserve did before stores), the default SQLite file, and Redis (Debian's
`redis-server`, started here on a free port with no persistence). Each round runs wrk
(1 connection) against each in turn, the order rotated per round, so a machine whose
speed drifts weighs on all three alike; the figure is the median req/s per store and
its ratio to memory. Run: `.venv/bin/python -m bench.store_cost [--rounds 5] [--seconds 10]`.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

from bench.loadgen import wait_http, wrk
from bench.procs import Proc, free_port

MODEL = pathlib.Path(__file__).resolve().parent / "models" / "noop"


def _ready(status: int, body: bytes) -> bool:
    return status == 200 and b'"READY"' in body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    folder = pathlib.Path(tempfile.mkdtemp(prefix="store-cost-"))
    redis_port = free_port()
    redis = subprocess.Popen(
        [shutil.which("redis-server") or "/usr/bin/redis-server", "--port", str(redis_port),
         "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(folder)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stores = {"memory": "memory", "sqlite": str(folder / "store.sqlite3"),
              "redis": f"redis://127.0.0.1:{redis_port}/0"}
    servers: dict[str, tuple[str, Proc]] = {}
    body = folder / "noop.json"
    body.write_bytes(b'{"input":{"text":"hi"}}')
    try:
        for name, store in stores.items():
            port = free_port()
            env = {**os.environ, "LOG_FORMAT": "console", "COG_LOG_LEVEL": "WARNING",
                   "COGSERVE_STATE_DIR": str(folder / "state")}
            proc = Proc([sys.executable, "-m", "cogserve.cli", "serve", str(MODEL), "--host",
                         "127.0.0.1", "--port", str(port), "--store", store],
                        env=env, log=folder / f"{name}.log")
            url = f"http://127.0.0.1:{port}"
            servers[name] = (url, proc)
            wait_http(url + "/health-check", ready=_ready, timeout=60, alive=proc.alive)
        names = list(servers)
        for name in names:  # warm up: first requests, imports, page cache
            wrk("wrk", servers[name][0] + "/predictions", connections=1, seconds=2, body=body)
        rates: dict[str, list[float]] = {name: [] for name in names}
        for round_ in range(args.rounds):
            order = names[round_ % len(names):] + names[:round_ % len(names)]
            for name in order:
                result = wrk("wrk", servers[name][0] + "/predictions", connections=1,
                             seconds=args.seconds, body=body)
                assert result.non_2xx == 0, (name, result)
                rates[name].append(result.ok_per_s)
            load = os.getloadavg()[0]
            print(f"round {round_ + 1}: " + ", ".join(
                f"{name} {rates[name][-1]:,.0f}" for name in names) + f" req/s (load {load:.1f})",
                flush=True)
        base = statistics.median(rates["memory"])
        for name in names:
            median = statistics.median(rates[name])
            print(f"{name:7s} median {median:,.0f} req/s ({median / base:.3f}x memory), "
                  f"spread {min(rates[name]):,.0f}-{max(rates[name]):,.0f}")
    finally:
        for _, proc in servers.values():
            proc.stop()
        redis.kill()
        redis.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
