"""Ray Serve scaling: a CPU-bound sync model (~20 ms of CPU per prediction), 8 clients.

Figures: req/s of plain `cogserve serve`, of `cogserve ray --replicas 1` and of
`--replicas 2` on this machine; the ratios 2 replicas / 1 replica (target >= 1.7x) and
Ray at 1 replica / plain serve (the cost of Ray's proxy). Each system is started, warmed
up, measured for --rounds wrk runs and stopped before the next starts (two Ray clusters at
once would tax each other's cores). Run it from an environment with cogserve[ray]:

    .venv/bin/python -m bench.ray_scaling [--rounds 3] [--seconds 10]

It prints a Markdown section; --write puts it into bench/RESULTS.md in place of the
previous one (the rest of the file is left alone).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

from bench import envs, loadgen
from bench.procs import Proc, free_port

MODEL = envs.BENCH / "models" / "cpu_sync"  # scenario 9's model (~20 ms of pure Python)
RESULTS = envs.BENCH / "RESULTS.md"
HEADING = "## Ray Serve scaling (cogserve ray)"
CLIENTS = 8
START_TIMEOUT = 240.0
SYSTEMS = {
    "cogserve serve --queue-size 64": ["serve", "--queue-size", "64"],
    "cogserve ray, 1 replica": ["ray", "--replicas", "1"],
    "cogserve ray, 2 replicas": ["ray", "--replicas", "2"],
}


def measure(name: str, args: list[str], rounds: int, seconds: float, wrk: str
            ) -> tuple[list[loadgen.WrkResult], float]:
    """wrk runs against one system, and the machine's 1-minute load average before them."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    tmp = tempfile.mkdtemp(prefix="ray-bench-", dir="/tmp")  # Ray's sockets: a short path
    log = envs.CACHE / "logs" / f"ray_scaling-{args[0]}-{args[-1]}.log"
    proc = Proc([sys.executable, "-m", "cogserve.cli", args[0], str(MODEL), *args[1:], "--host",
                 "127.0.0.1", "--port", str(port)],
                env={"LOG_FORMAT": "console", "TMPDIR": tmp, "RAY_TMPDIR": tmp}, log=log)
    try:
        loadgen.wait_http(url + "/health-check", timeout=START_TIMEOUT, alive=proc.alive,
                          ready=lambda status, body: status == 200 and b"READY" in body)
        body = pathlib.Path(tmp) / "body.json"
        body.write_text(json.dumps({"input": {}}))
        post = {"url": url + "/predictions", "connections": CLIENTS, "body": body,
                "headers": {"Content-Type": "application/json"}}
        load = os.getloadavg()[0]  # other work on the machine skews every figure
        loadgen.wrk(wrk, seconds=5, **post)  # warm-up (Ray's routers learn queue lengths)
        results = [loadgen.wrk(wrk, seconds=seconds, **post) for _ in range(rounds)]
        for r in results:
            if r.non_2xx or r.socket_errors:
                raise loadgen.LoadError(f"{name}: {r.non_2xx} non-2xx, {r.socket_errors} "
                                        "socket errors")
        return results, load
    finally:
        proc.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def report(figures: dict[str, tuple[list[loadgen.WrkResult], float]], rounds: int,
           seconds: float) -> str:
    med = {name: statistics.median(r.ok_per_s for r in rs) for name, (rs, _) in figures.items()}
    serve, one, two = (med[n] for n in SYSTEMS)
    lines = [HEADING, "",
             f"`python -m bench.ray_scaling`: bench/models/cpu_sync (a sync run() of ~20 ms of "
             f"pure-Python work), {CLIENTS} clients (wrk), POST /predictions, {rounds} runs of "
             f"{seconds:g} s per system after a 5 s warm-up, on this 2-core machine "
             f"({time.strftime('%Y-%m-%d')}).", "",
             "| system | req/s (median) | runs | p50 ms | p99 ms | load avg before |",
             "|---|---|---|---|---|---|"]
    for name, (rs, load) in figures.items():
        runs = ", ".join(f"{r.ok_per_s:.1f}" for r in rs)
        p50 = statistics.median(r.p50_ms for r in rs)
        p99 = statistics.median(r.p99_ms for r in rs)
        lines.append(f"| {name} | {med[name]:.1f} | {runs} | {p50:.0f} | {p99:.0f} | "
                     f"{load:.1f} |")
    lines += ["",
              f"- 2 replicas / 1 replica: **{two / one:.2f}x** (target >= 1.7x: "
              f"{'met' if two / one >= 1.7 else 'not met'})",
              f"- Ray at 1 replica / plain `cogserve serve`: **{one / serve:.2f}** (below 1: "
              "what Ray's proxy and its extra hop cost)",
              "- A load average above 2 means other work shared the 2 cores: a system of more "
              "processes (Ray's proxy, controller, replicas) then gets a larger share of the "
              "CPU than plain `cogserve serve`, which skews both ratios.", ""]
    return "\n".join(lines)


def write(section: str) -> None:
    text = RESULTS.read_text() if RESULTS.exists() else ""
    start = text.find(HEADING)
    if start >= 0:
        end = text.find("\n## ", start + len(HEADING))
        text = text[:start] + section + (text[end + 1:] if end >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args()
    wrk = envs.wrk()
    figures = {name: measure(name, argv, args.rounds, args.seconds, wrk)
               for name, argv in SYSTEMS.items()}
    section = report(figures, args.rounds, args.seconds)
    print(section)
    if args.write:
        write(section)


if __name__ == "__main__":
    main()
