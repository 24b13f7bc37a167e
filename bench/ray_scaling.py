"""Ray Serve scaling: a CPU-bound sync model (~20 ms of CPU per prediction), 8 clients.

Figures: req/s of plain `cogserve serve`, and of `cogserve ray --replicas 1` and
`--replicas 2` with each ingress (Ray's proxy; Ray's HAProxy) on this machine; per ingress
the ratios 2 replicas / 1 replica (target >= 1.7x) and 1 replica / plain serve (the cost
of Ray's ingress); and where the CPU goes: the CPU
time (user + system, from /proc) each part of a system used during the measured runs,
per request answered, which other work on the machine skews much less than req/s. Each
system is started, warmed up, measured for --rounds wrk runs and stopped before the next
starts (two Ray clusters at once would tax each other's cores). Run it from an
environment with cogserve[ray]:

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
from dataclasses import dataclass

from bench import envs, loadgen
from bench.procs import Proc, command_line, cpu_seconds, free_port

MODEL = envs.BENCH / "models" / "cpu_sync"  # scenario 9's model (~20 ms of pure Python)
RESULTS = envs.BENCH / "RESULTS.md"
HEADING = "## Ray Serve scaling (cogserve ray)"
CLIENTS = 8
START_TIMEOUT = 240.0
SERVE = "cogserve serve --queue-size 64"
INGRESSES = ("proxy", "haproxy")  # `cogserve ray --ingress`


def ray_system(ingress: str, replicas: int) -> str:
    return f"cogserve ray --ingress {ingress}, {replicas} replica{'s' if replicas > 1 else ''}"


SYSTEMS = {SERVE: ["serve", "--queue-size", "64"]} | {
    ray_system(ingress, n): ["ray", "--ingress", ingress, "--replicas", str(n)]
    for ingress in INGRESSES for n in (1, 2)}
# the parts of a system whose CPU is shown, by what their command line holds (Ray's actors
# set it to ray::CLASS); any other process of the system counts as the rest
PARTS = {
    "Ray's proxy": "ray::ProxyActor",
    "HAProxy": "haproxy",
    "replicas": "ray::ServeReplica",
    "HTTP server": "cogserve.cli.main serve",
    "model workers": "cogserve.worker",
}
REST = "the rest"


@dataclass
class Measured:
    runs: list[loadgen.WrkResult]
    load: float  # the machine's 1-minute load average before the runs
    cpu_ms: dict[str, float]  # CPU ms per 2xx answer, by part (PARTS, REST)


def part_of(pid: int) -> str:
    line = command_line(pid)
    return next((part for part, marker in PARTS.items() if marker in line), REST)


def cpu_by_process(proc: Proc) -> dict[int, tuple[str, float]]:
    return {pid: (part_of(pid), cpu_seconds(pid)) for pid in proc.tree()}


def measure(name: str, args: list[str], rounds: int, seconds: float, wrk: str) -> Measured:
    """wrk runs against one system, the load average before them and the CPU they cost."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    tmp = tempfile.mkdtemp(prefix="ray-bench-", dir="/tmp")  # Ray's sockets: a short path
    log = envs.CACHE / "logs" / f"ray_scaling-{'-'.join(args[::2])}-{args[-1]}.log"
    proc = Proc([sys.executable, "-m", "cogserve.cli", args[0], str(MODEL), *args[1:], "--host",
                 "127.0.0.1", "--port", str(port)],
                env={"LOG_FORMAT": "console", "TMPDIR": tmp, "RAY_TMPDIR": tmp,
                     "RAY_SERVE_HAPROXY_STATS_PORT": str(free_port()),
                     "RAY_SERVE_HAPROXY_METRICS_PORT": str(free_port())}, log=log)
    try:
        loadgen.wait_http(url + "/health-check", timeout=START_TIMEOUT, alive=proc.alive,
                          ready=lambda status, body: status == 200 and b"READY" in body)
        body = pathlib.Path(tmp) / "body.json"
        body.write_text(json.dumps({"input": {}}))
        post = {"url": url + "/predictions", "connections": CLIENTS, "body": body,
                "headers": {"Content-Type": "application/json"}}
        load = os.getloadavg()[0]  # other work on the machine skews every figure
        loadgen.wrk(wrk, seconds=5, **post)  # warm-up (Ray's routers learn queue lengths)
        before = cpu_by_process(proc)
        results = [loadgen.wrk(wrk, seconds=seconds, **post) for _ in range(rounds)]
        after = cpu_by_process(proc)
        for r in results:
            if r.non_2xx or r.socket_errors:
                raise loadgen.LoadError(f"{name}: {r.non_2xx} non-2xx, {r.socket_errors} "
                                        "socket errors")
        answered = sum(r.ok for r in results)
        cpu_ms = dict.fromkeys([*PARTS, REST], 0.0)
        for pid, (part, used) in after.items():
            cpu_ms[part] += (used - before.get(pid, (part, 0.0))[1]) * 1000 / answered
        return Measured(results, load, cpu_ms)
    finally:
        proc.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def model_work(measured: Measured, rate: float) -> float:
    """CPU seconds a second the model's workers did at `rate` req/s."""
    return rate * measured.cpu_ms["model workers"] / 1000


def report(figures: dict[str, Measured], rounds: int, seconds: float) -> str:
    med = {name: statistics.median(r.ok_per_s for r in m.runs) for name, m in figures.items()}
    lines = [HEADING, "",
             f"`python -m bench.ray_scaling`: bench/models/cpu_sync (a sync run() of ~20 ms of "
             f"pure-Python work), {CLIENTS} clients (wrk), POST /predictions, {rounds} runs of "
             f"{seconds:g} s per system after a 5 s warm-up, on this 2-core machine "
             f"({time.strftime('%Y-%m-%d')}).", "",
             "| system | req/s (median) | runs | p50 ms | p99 ms | load avg before |",
             "|---|---|---|---|---|---|"]
    for name, m in figures.items():
        runs = ", ".join(f"{r.ok_per_s:.1f}" for r in m.runs)
        p50 = statistics.median(r.p50_ms for r in m.runs)
        p99 = statistics.median(r.p99_ms for r in m.runs)
        lines.append(f"| {name} | {med[name]:.1f} | {runs} | {p50:.0f} | {p99:.0f} | "
                     f"{m.load:.1f} |")
    parts = [*PARTS, REST]
    lines.append("")
    for ingress in INGRESSES:
        one_name, two_name = ray_system(ingress, 1), ray_system(ingress, 2)
        one, two = med[one_name], med[two_name]
        steady = model_work(figures[two_name], two) / model_work(figures[one_name], one)
        lines += [f"- `--ingress {ingress}`: 2 replicas / 1 replica **{two / one:.2f}x** "
                  f"(target >= 1.7x: {'met' if two / one >= 1.7 else 'not met'}); the same "
                  f"with the machine's speed taken out **{steady:.2f}x** (model CPU per "
                  f"second, see below); 1 replica / plain `cogserve serve` "
                  f"**{one / med[SERVE]:.2f}** (below 1: what Ray's ingress and its extra "
                  "hop cost)"]
    lines += ["- The speed taken out: this VM's CPU speed drifts (the same pure-Python loop "
              "took 1.41-2.29 s of CPU within a minute on an idle machine), so the model's "
              "worker needs 19-30 ms of CPU per prediction depending on when a system is "
              "measured, and a ratio of two req/s figures taken minutes apart carries that "
              "drift. req/s x the workers' CPU per prediction (the cores' worth of model work "
              "done per second) does not: its ratio is the scaling at a constant speed."]
    lines += ["- A load average above 2 means other work shared the 2 cores: a system of more "
              "processes (Ray's proxy, controller, replicas) then gets a larger share of the "
              "CPU than plain `cogserve serve`, which skews both ratios.", "",
              "CPU ms per request answered (user + system time of each part during the measured "
              "runs; the rest: Ray's GCS, raylet, controller, agents and log monitor, and the "
              "`cogserve` command itself):", "",
              "| system | " + " | ".join(parts) + " | total |",
              "|---" * (len(parts) + 2) + "|"]
    for name, m in figures.items():
        cells = " | ".join(f"{m.cpu_ms[p]:.1f}" if m.cpu_ms[p] else "-" for p in parts)
        lines.append(f"| {name} | {cells} | {sum(m.cpu_ms.values()):.1f} |")
    lines.append("")
    for ingress in INGRESSES:
        two_cpu = sum(figures[ray_system(ingress, 2)].cpu_ms.values())
        ceiling = 2 * 1000 / two_cpu  # both cores busy with nothing but this system
        lines += [f"- `--ingress {ingress}`: the CPU ceiling of 2 replicas on 2 cores at "
                  f"{two_cpu:.1f} ms per request: {ceiling:.0f} req/s, "
                  f"{ceiling / med[ray_system(ingress, 1)]:.2f}x the 1-replica rate (wrk's own "
                  "CPU not counted)"]
    return "\n".join(lines) + "\n\n"  # a blank line before the next section


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
