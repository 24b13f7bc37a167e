"""Turn the rounds into bench/RESULTS.md: one table, the targets, and how it was run.

Each figure gets its median over the rounds and its spread (min-max), per system, and
the ratio cogserve / that system of the medians. Whether a ratio above 1 is good
depends on the figure, so each row says which way is better.
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import subprocess
from dataclasses import dataclass, field

from bench import envs
from bench.scenarios import Figure, Scenario
from bench.systems import COGSERVE, COGSERVE_METRICS_OFF, COGSERVE_ONE_WORKER, MLSERVER, REFERENCE

NAMES = {COGSERVE: "cogserve", COGSERVE_METRICS_OFF: "cogserve, metrics off (COGSERVE_METRICS=0)",
         COGSERVE_ONE_WORKER: "cogserve --workers 1 --queue-size 64",
         REFERENCE: "reference (Cog 0.23.1 + coglet 0.23.1)",
         MLSERVER: "MLServer 1.7.1", "floor": "floor (bare ASGI on uvicorn)",
         "litserve": "LitServe 0.2.19 (workers_per_device=2)"}


@dataclass
class Outcome:
    """What one system did in one scenario: values per figure per round, or why not."""

    values: dict[str, list[float]] = field(default_factory=dict)
    note: str | None = None   # "failed: ...", "not supported: ...", "not available: ..."

    def add(self, round_values: dict[str, float]) -> None:
        for name, value in round_values.items():
            self.values.setdefault(name, []).append(value)

    def median(self, figure: str) -> float | None:
        got = self.values.get(figure)
        return statistics.median(got) if got else None


Results = dict[str, dict[str, Outcome]]


def fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


class Notes:
    """Failure reasons, numbered once and listed under the table."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def ref(self, note: str) -> str:
        if note not in self.items:
            self.items.append(note)
        kind = note.split(":", 1)[0]
        return f"{kind} [{self.items.index(note) + 1}]"


def _cell(outcome: Outcome, figure: Figure, notes: Notes) -> tuple[str, str]:
    got = outcome.values.get(figure.name)
    if not got:
        return (notes.ref(outcome.note) if outcome.note else "no data"), ""
    spread = f"{fmt(min(got))} – {fmt(max(got))}" if len(got) > 1 else ""
    note = f" ({notes.ref(outcome.note)} after {len(got)} rounds)" if outcome.note else ""
    return fmt(statistics.median(got)) + note, spread


def _ratio(ours: float | None, theirs: float | None) -> str:
    if not ours or not theirs:
        return ""
    return f"{ours / theirs:.2f}x"


def table(scenarios: list[Scenario], results: Results) -> list[str]:
    notes = Notes()
    lines = ["| # | scenario | figure | better | system | median | spread (min – max) | "
             "cogserve / system |",
             "|---|---|---|---|---|---:|---:|---:|"]
    for scenario in scenarios:
        outcomes = results.get(scenario.key, {})
        for figure in scenario.figures:
            label = figure.name + (f" ({figure.unit})" if figure.unit else "")
            ours = outcomes.get(COGSERVE, Outcome()).median(figure.name)
            for system in scenario.systems:
                if system not in outcomes:
                    continue
                outcome = outcomes[system]
                median, spread = _cell(outcome, figure, notes)
                ratio = "" if system == COGSERVE else _ratio(ours, outcome.median(figure.name))
                lines.append(f"| {scenario.number} | {scenario.title} | {label} | "
                             f"{'higher' if figure.higher_is_better else 'lower'} | "
                             f"{NAMES.get(system, system)} | {median} | {spread} | {ratio} |")
    if notes.items:
        lines += ["", "Notes:", ""]
        lines += [f"{n}. {text}" for n, text in enumerate(notes.items, 1)]
    return lines


def _median(results: Results, key: str, system: str, figure: str) -> float | None:
    outcome = results.get(key, {}).get(system)
    return outcome.median(figure) if outcome else None


def targets(results: Results) -> list[str]:
    """The issue targets, each met / not met / not measured, with its ratio."""
    rows: list[tuple[str, bool | None, str]] = []

    ours = _median(results, "noop_seq", COGSERVE, "successful req/s")
    ref = _median(results, "noop_seq", REFERENCE, "successful req/s")
    errors = results.get("noop_seq", {}).get(COGSERVE, Outcome()).values.get("non-2xx")
    if ours is not None and ref:
        ok = ours >= 2 * ref and errors is not None and max(errors) == 0
        rows.append(("Scenario 1: cogserve ≥ 2x the reference's successful sequential "
                     "req/s, zero non-2xx (issue 3)", ok,
                     f"{ours / ref:.2f}x; cogserve non-2xx in all rounds: "
                     f"{int(sum(errors or []))}"))
    else:
        rows.append(("Scenario 1: cogserve ≥ 2x the reference (issue 3)", None, "not measured"))

    ours = _median(results, "noop_seq", COGSERVE, "successful req/s")
    off = _median(results, "noop_seq", COGSERVE_METRICS_OFF, "successful req/s")
    rows.append(("Scenario 1: req/s with metrics on within 5% of metrics off (issue 15)",
                 None if ours is None or not off else ours >= 0.95 * off,
                 f"{ours / off:.3f}x" if ours is not None and off else "not measured"))

    ours = _median(results, "sse", COGSERVE, "tokens/s")
    ref = _median(results, "sse", REFERENCE, "tokens/s")
    rows.append(("Scenario 4: SSE tokens/s ≥ the reference (issue 5)",
                 None if ours is None or not ref else ours >= ref,
                 f"{ours / ref:.2f}x" if ours is not None and ref else "not measured"))

    ours = _median(results, "v2_json", COGSERVE, "successful req/s")
    peer = _median(results, "v2_json", MLSERVER, "successful req/s")
    rows.append(("Scenario 8: V2 JSON req/s ahead of MLServer (issue 7)",
                 None if ours is None or not peer else ours > peer,
                 f"{ours / peer:.2f}x" if ours is not None and peer else "not measured"))

    binary = _median(results, "v2_binary", COGSERVE, "successful req/s")
    rows.append(("Scenario 8: V2 binary req/s ≥ 5x V2 JSON req/s, cogserve (issue 7)",
                 None if binary is None or not ours else binary >= 5 * ours,
                 f"{binary / ours:.2f}x" if binary is not None and ours else "not measured"))

    rows += _pool_targets(results)
    lines = ["| target | met | ratio |", "|---|---|---|"]
    for text, ok, ratio in rows:
        verdict = "not measured" if ok is None else ("**met**" if ok else "**not met**")
        lines.append(f"| {text} | {verdict} | {ratio} |")
    return lines


def _pool_targets(results: Results) -> list[tuple[str, bool | None, str]]:
    """Scenario 9 (issue 14): --workers 2 vs 1, and a queue instead of 409s."""
    two = _median(results, "cpu_pool", COGSERVE, "successful req/s")
    one = _median(results, "cpu_pool", COGSERVE_ONE_WORKER, "successful req/s")
    rows: list[tuple[str, bool | None, str]] = [(
        "Scenario 9: --workers 2 ≥ 1.8x --workers 1 successful req/s (issue 14)",
        None if two is None or not one else two >= 1.8 * one,
        f"{two / one:.2f}x" if two is not None and one else "not measured")]
    errors = results.get("cpu_pool", {}).get(COGSERVE, Outcome()).values.get("non-2xx")
    rows.append(("Scenario 9: zero non-2xx with --queue-size 64 (issue 14)",
                 None if not errors else max(errors) == 0,
                 f"non-2xx in all rounds: {int(sum(errors))}" if errors else "not measured"))
    return rows


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=envs.REPO)
    return done.stdout.strip()


def _python_version() -> str:
    python = envs.VENVS / COGSERVE / "bin" / "python"
    done = subprocess.run([str(python), "-c", "import sys; print(sys.version.split()[0])"],
                          capture_output=True, text=True)
    return done.stdout.strip() or platform.python_version()


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def render(scenarios: list[Scenario], results: Results, *, quick: bool, rounds: int,
           seconds: float, started: datetime.datetime, load_before: str) -> str:
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    if _git("status", "--porcelain", "--", "cogserve"):
        commit += " (with uncommitted changes in cogserve/)"
    lines = [
        "# Benchmark results",
        "",
        "Written by `bench/run`" + (" --quick (indicative only)" if quick else "") + ".",
        "",
        f"- date: {started.strftime('%Y-%m-%d %H:%M UTC')}",
        f"- commit: {commit}",
        f"- CPUs: {os.cpu_count()} ({_cpu_model()}); load average before the run: "
        f"{load_before}",
        f"- Python: {_python_version()}",
        f"- rounds: {rounds} per system, interleaved (A B A B ...) after a warm-up; "
        f"rate runs last {seconds:g} s each; load generator wrk (1 thread) for rates, "
        "http.client for streams, large bodies and cold starts",
        "- all servers on 127.0.0.1, client and servers on the same machine",
        "",
        "## Targets",
        "",
        *targets(results),
        "",
        "## All figures",
        "",
        "Median over the rounds; spread is the lowest and highest round. The last column is "
        "cogserve's median divided by that system's: above 1 is better for cogserve where "
        "higher is better, below 1 where lower is better. The floor is a bare ASGI app on "
        "the same HTTP server cogserve uses (uvicorn + httptools + uvloop) that answers a "
        "constant body: what the HTTP layer alone allows.",
        "",
        *table(scenarios, results),
        "",
    ]
    return "\n".join(lines)
