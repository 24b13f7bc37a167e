"""What the prediction store costs scenario 1 (sync no-op, 1 sequential client), per store.

Three cogserve servers of this checkout on `bench/models/noop`: `--store memory` (what
cogserve did before stores), the default SQLite file, and Redis (Debian's
`redis-server`, started here on a free port with no persistence). Each round runs wrk
(1 connection) against each in turn, the order rotated per round, so a machine whose
speed drifts weighs on all three alike; the figure is the median req/s per store and
its ratio to memory. This machine is shared and its load swings req/s by 2-3x minute to
minute, so the figure that decides is the server process's CPU per request (user +
system time of all its threads, the store's writer included, from /proc, over the
requests wrk completed): what the store adds to each request's work, which a busy
machine stretches far less than it stretches wall time.
Each store's figures are also given as the median of its per-round ratios to memory
(paired: the servers of one round ran within seconds of each other), which a drifting
machine disturbs less than a ratio of medians.
`--in-process` measures the two parts of that cost apart, best of 7: the event loop's
(the listener that queues a finished sync prediction) and the writer thread's (batches
of 256 records, what a full flush brings, written to each store already at its 1,000
bound, as a serving store is), in us of CPU per prediction.
Run: `.venv/bin/python -m bench.store_cost [--rounds 5] [--seconds 10] [--in-process]`.
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
import time
import uuid

from bench.loadgen import wait_http, wrk
from bench.procs import Proc, free_port

MODEL = pathlib.Path(__file__).resolve().parent / "models" / "noop"


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (all its threads)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_redis(port: int) -> None:
    import socket

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("redis-server did not start")


def _ready(status: int, body: bytes) -> bool:
    return status == 200 and b'"READY"' in body


def in_process(folder: pathlib.Path, redis_url: str) -> None:
    import asyncio

    from cogserve.runtime.prediction import Prediction
    from cogserve.runtime.store.durable import SYNC_BATCH, Durable
    from cogserve.runtime.store.interface import Bounds, FinishedBatch, PredictionStore, Row
    from cogserve.runtime.store.redis_backend import RedisStore
    from cogserve.runtime.store.sqlite_backend import SQLiteStore
    from cogserve.wire.states import Event

    bounds = Bounds(1000, 64 << 20)

    async def loop_side() -> float:
        store = SQLiteStore(str(folder / "loop.sqlite3"))
        durable = Durable(store, bounds)
        await durable.start()
        predictions = []
        for i in range(SYNC_BATCH - 1):  # one batch: the listener alone, no writing
            prediction = Prediction(f"p{i}", {"text": "hi"})
            prediction.mark_started()
            prediction.succeed("hi", 0.0001)
            prediction.encoded()  # the memory store encoded it already
            predictions.append(prediction)
        best = float("inf")
        for _ in range(7):
            start = time.perf_counter()
            for prediction in predictions:
                durable.listener(prediction, Event.COMPLETED, {})
            best = min(best, (time.perf_counter() - start) / len(predictions))
            durable._flush_sync()
        await durable.close()
        return best * 1e6

    async def finished(count: int) -> list[Row]:
        rows: list[Row] = []
        for _ in range(count):  # ids as the server makes them: random, so is their order
            prediction = Prediction(uuid.uuid4().hex, {"text": "hi"})
            prediction.mark_started()
            prediction.succeed("hi", 0.0001)
            rows.append((prediction.id, prediction.kind, prediction.status._value_,
                         prediction.created, prediction.encoded()))  # as the listener
        return rows

    print(f"event loop: {asyncio.run(loop_side()):.2f} us per finished sync prediction")
    stores: dict[str, PredictionStore] = {
        "sqlite": SQLiteStore(str(folder / "writer.sqlite3")),
        "redis": RedisStore(redis_url, "bench")}
    filler = asyncio.run(finished(bounds.count + SYNC_BATCH))
    for name, store in stores.items():
        for i in range(0, len(filler), SYNC_BATCH):  # at the bound: each row evicts one
            store.write([FinishedBatch(filler[i:i + SYNC_BATCH])], bounds, "bench")
        best = float("inf")
        for _ in range(7):
            rows = asyncio.run(finished(SYNC_BATCH * 4))
            start = time.thread_time()
            for i in range(0, len(rows), SYNC_BATCH):  # as the writer thread does
                store.write([FinishedBatch(rows[i:i + SYNC_BATCH])], bounds, "bench")
            best = min(best, (time.thread_time() - start) / len(rows))
        store.close("bench")
        print(f"writer thread, {name}: {best * 1e6:.2f} us of CPU per prediction "
              f"(batches of {SYNC_BATCH}, at the {bounds.count} bound)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--in-process", action="store_true")
    args = parser.parse_args()
    folder = pathlib.Path(tempfile.mkdtemp(prefix="store-cost-"))
    redis_port = free_port()
    redis = subprocess.Popen(
        [shutil.which("redis-server") or "/usr/bin/redis-server", "--port", str(redis_port),
         "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(folder)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if args.in_process:
        try:
            _wait_redis(redis_port)
            in_process(folder, f"redis://127.0.0.1:{redis_port}/0")
        finally:
            redis.kill()
            redis.wait(timeout=10)
            shutil.rmtree(folder, ignore_errors=True)
        return
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
        cpu: dict[str, list[float]] = {name: [] for name in names}  # us per request
        for round_ in range(args.rounds):
            order = names[round_ % len(names):] + names[:round_ % len(names)]
            for name in order:
                pid = servers[name][1].process.pid
                before = cpu_seconds(pid)
                result = wrk("wrk", servers[name][0] + "/predictions", connections=1,
                             seconds=args.seconds, body=body)
                assert result.non_2xx == 0, (name, result)
                rates[name].append(result.ok_per_s)
                cpu[name].append((cpu_seconds(pid) - before) / max(1, result.ok) * 1e6)
            load = os.getloadavg()[0]
            print(f"round {round_ + 1} (load {load:.1f}): " + ", ".join(
                f"{name} {rates[name][-1]:,.0f} req/s {cpu[name][-1]:.0f} us"
                for name in names), flush=True)
        base_rate = statistics.median(rates["memory"])
        base_cpu = statistics.median(cpu["memory"])
        for name in names:
            rate, used = statistics.median(rates[name]), statistics.median(cpu[name])
            paired_rate = [a / b for a, b in zip(rates[name], rates["memory"], strict=True)]
            paired_cpu = [a / b for a, b in zip(cpu[name], cpu["memory"], strict=True)]
            print(f"{name:7s} server CPU per request: median {used:.1f} us "
                  f"({used / base_cpu:.3f}x memory), spread {min(cpu[name]):.0f}-"
                  f"{max(cpu[name]):.0f}; req/s median {rate:,.0f} "
                  f"({rate / base_rate:.3f}x), spread {min(rates[name]):,.0f}-"
                  f"{max(rates[name]):,.0f}; paired rounds: req/s "
                  f"{statistics.median(paired_rate):.3f}x ({min(paired_rate):.2f}-"
                  f"{max(paired_rate):.2f}), CPU {statistics.median(paired_cpu):.3f}x")
    finally:
        for _, proc in servers.values():
            proc.stop()
        redis.kill()
        redis.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
