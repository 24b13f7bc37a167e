"""`bench/run --profile SCENARIO`: cogserve alone under py-spy while the scenario runs.

py-spy attaches to the running server (parent and worker, `--subprocesses`) after the
warm-up, samples for a fixed time while the scenario's load repeats, and writes a flame
graph SVG. `summary()` reads the SVG's frame titles back into a short text table, so
the answer to "where does the time go" is in the terminal too.
"""

from __future__ import annotations

import html
import pathlib
import re
import time

from bench import envs, systems
from bench.procs import Proc
from bench.scenarios import Context, Scenario
from bench.systems import COGSERVE

PROFILES = envs.CACHE / "profiles"
_TITLE = re.compile(r"<title>(.+?) \((\d[\d,]*) samples?, ([\d.]+)%\)</title>")


def record(scenario: Scenario, ctx: Context, seconds: float) -> pathlib.Path:
    if scenario.restart_each_round:
        raise SystemExit(f"--profile {scenario.key}: cold start is not profiled "
                         "(py-spy attaches to a running server)")
    scenario.prepare(ctx)
    PROFILES.mkdir(parents=True, exist_ok=True)
    out = PROFILES / f"{scenario.key}.svg"
    out.unlink(missing_ok=True)
    spy = envs.venv(COGSERVE) / "bin" / "py-spy"
    server = scenario.start(COGSERVE, ctx)
    recorder: Proc | None = None
    try:
        assert server.proc is not None
        scenario.warmup(server, ctx)
        recorder = Proc([str(spy), "record", "--pid", str(server.proc.pid), "--subprocesses",
                         "--nonblocking", "--rate", "200", "--duration", str(round(seconds)),
                         "--format", "flamegraph", "-o", str(out)],
                        log=systems.LOGS / f"py-spy-{scenario.key}.log")
        time.sleep(0.5)  # py-spy attaches before the load starts
        while recorder.alive():
            scenario.measure(server, ctx)
        if not out.exists():
            raise SystemExit(f"py-spy wrote no profile:\n{recorder.tail()}")
    finally:
        if recorder is not None:
            recorder.process.wait(timeout=60)
            recorder.stop()
        server.stop()
    return out


def summary(svg: pathlib.Path, top: int = 40) -> list[str]:
    """The functions with the most samples under them (inclusive), from the SVG."""
    best: dict[str, tuple[int, float]] = {}
    for name, samples, percent in _TITLE.findall(svg.read_text(errors="replace")):
        count = int(samples.replace(",", ""))
        key = re.sub(r":\d+\)$", ")", html.unescape(name))  # a row per function, not line
        if key == "all":
            continue
        if count > best.get(key, (0, 0.0))[0]:
            best[key] = (count, float(percent))
    rows = sorted(best.items(), key=lambda kv: -kv[1][0])
    lines = [f"py-spy: functions by samples under them (inclusive), top {top}:"]
    lines += [f"  {pct:5.1f}%  {count:6d}  {name}" for name, (count, pct) in rows[:top]]
    return lines
