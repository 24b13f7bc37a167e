"""Turn the rounds into bench/RESULTS.md: one table, the targets, and how it was run.

Each figure gets its median over the rounds and its spread (min-max), per system, and
the ratio cogserve / that system of the medians. Whether a ratio above 1 is good
depends on the figure, so each row says which way is better. With `--baseline REF` the
table has one more column, baseline / that system, and the targets say for each scenario
whether cogserve is worse than the baseline beyond the noise of the interleaved rounds.
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

from bench import envs
from bench.catalog import ALL
from bench.scenarios import PARENT_CPU, WORKER_CPU, Figure, Scenario
from bench.systems import (
    BASELINE,
    COGSERVE,
    COGSERVE_METRICS_OFF,
    COGSERVE_ONE_WORKER,
    COGSERVE_STORE_MEMORY,
    COGSERVE_UNBATCHED,
    FLOOR,
    LITSERVE,
    MLSERVER,
    REFERENCE,
)

NAMES = {COGSERVE: "cogserve", COGSERVE_METRICS_OFF: "cogserve, metrics off (COGSERVE_METRICS=0)",
         COGSERVE_ONE_WORKER: "cogserve --workers 1 --queue-size 64",
         COGSERVE_STORE_MEMORY: "cogserve --store memory (no prediction store)",
         COGSERVE_UNBATCHED: "cogserve, the model without @batch (--queue-size 64)",
         REFERENCE: "reference (Cog 0.23.1 + coglet 0.23.1)",
         MLSERVER: "MLServer 1.7.1", FLOOR: "floor (bare ASGI on uvicorn)",
         "litserve": "LitServe 0.2.19 (9: workers_per_device=2; 11: max_batch_size=16, "
                     "batch_timeout=5 ms; 12: max_batch_size=32, batch_timeout=2 ms)"}


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


def _has_baseline(results: Results) -> bool:
    return any(BASELINE in outcomes for outcomes in results.values())


def table(scenarios: list[Scenario], results: Results, baseline: str | None = None) -> list[str]:
    notes = Notes()
    names = {**NAMES, BASELINE: baseline or "baseline"}
    with_baseline = _has_baseline(results)
    lines = ["| # | scenario | figure | better | system | median | spread (min – max) | "
             "cogserve / system |" + (" baseline / system |" if with_baseline else ""),
             "|---|---|---|---|---|---:|---:|---:|" + ("---:|" if with_baseline else "")]
    for scenario in scenarios:
        outcomes = results.get(scenario.key, {})
        for figure in scenario.figures:
            label = figure.name + (f" ({figure.unit})" if figure.unit else "")
            ours = outcomes.get(COGSERVE, Outcome()).median(figure.name)
            base = outcomes.get(BASELINE, Outcome()).median(figure.name)
            for system in scenario.lineup(with_baseline):
                if system not in outcomes:
                    continue
                outcome = outcomes[system]
                median, spread = _cell(outcome, figure, notes)
                theirs = outcome.median(figure.name)
                ratio = "" if system == COGSERVE else _ratio(ours, theirs)
                row = (f"| {scenario.number} | {scenario.title} | {label} | "
                       f"{'higher' if figure.higher_is_better else 'lower'} | "
                       f"{names.get(system, system)} | {median} | {spread} | {ratio} |")
                if with_baseline:
                    row += f" {'' if system in (COGSERVE, BASELINE) else _ratio(base, theirs)} |"
                lines.append(row)
    if notes.items:
        lines += ["", "Notes:", ""]
        lines += [f"{n}. {text}" for n, text in enumerate(notes.items, 1)]
    return lines


def _median(results: Results, key: str, system: str, figure: str) -> float | None:
    outcome = results.get(key, {}).get(system)
    return outcome.median(figure) if outcome else None


Row = tuple[str, bool | None, str]


def _against(text: str, ours: float | None, theirs: float | None,
             met: Callable[[float], bool]) -> Row:
    """A target on the ratio of two medians, cogserve's over another system's."""
    if ours is None or not theirs:
        return text, None, "not measured"
    return text, met(ours / theirs), f"{ours / theirs:.2f}x"


def _at_most(text: str, value: float | None, limit: float, unit: str) -> Row:
    if value is None:
        return text, None, "not measured"
    return text, value <= limit, f"{fmt(value)} {unit}"


def targets(results: Results, baseline: str | None = None) -> list[str]:
    """The issue targets, each met / not met / not measured, with its ratio."""
    rows: list[Row] = []

    def median(key: str, system: str, figure: str) -> float | None:
        return _median(results, key, system, figure)

    ours = median("noop_seq", COGSERVE, "successful req/s")
    rows.append(_against("Scenario 1: cogserve ≥ 0.5 of the floor's successful sequential "
                         "req/s (issue 24)", ours, median("noop_seq", FLOOR, "successful req/s"),
                         lambda r: r >= 0.5))
    ref = median("noop_seq", REFERENCE, "successful req/s")
    errors = results.get("noop_seq", {}).get(COGSERVE, Outcome()).values.get("non-2xx")
    if ours is not None and ref:
        ok = ours >= 4 * ref and errors is not None and max(errors) == 0
        rows.append(("Scenario 1: cogserve ≥ 4x the reference's successful sequential "
                     "req/s, zero non-2xx (issues 3, 24)", ok,
                     f"{ours / ref:.2f}x; cogserve non-2xx in all rounds: "
                     f"{int(sum(errors or []))}"))
    else:
        rows.append(("Scenario 1: cogserve ≥ 4x the reference (issues 3, 24)", None,
                     "not measured"))
    rows.append(_at_most("Scenario 1: cogserve's parent CPU per prediction ≤ 100 µs (issue 24)",
                         median("noop_seq", COGSERVE, PARENT_CPU), 100, "µs"))
    rows.append(_at_most("Scenario 1: cogserve's worker CPU per prediction ≤ 30 µs (issue 24)",
                         median("noop_seq", COGSERVE, WORKER_CPU), 30, "µs"))
    rows.append(_against("Scenario 1: req/s with metrics on within 5% of metrics off (issue 15)",
                         ours, median("noop_seq", COGSERVE_METRICS_OFF, "successful req/s"),
                         lambda r: r >= 0.95))
    rows.append(_against("Scenario 1: req/s with the default store (SQLite) within 3% of "
                         "--store memory (issue 27)",
                         ours, median("noop_seq", COGSERVE_STORE_MEMORY, "successful req/s"),
                         lambda r: r >= 0.97))

    rows.append(_against("Scenario 2: cogserve ≥ 3x the reference's successful req/s, "
                         "8 clients on one slot (issue 24)",
                         median("noop_8clients", COGSERVE, "successful req/s"),
                         median("noop_8clients", REFERENCE, "successful req/s"),
                         lambda r: r >= 3))
    fraction = median("async_16", COGSERVE, "fraction of ideal 1600/s")
    rows.append(("Scenario 3: cogserve ≥ 0.9 of the ideal 1600/s, async, 16 slots (issue 24)",
                 None if fraction is None else fraction >= 0.9,
                 "not measured" if fraction is None else f"{fraction:.2f}"))
    rows.append(_against("Scenario 4: SSE tokens/s ≥ the reference (issue 5)",
                         median("sse", COGSERVE, "tokens/s"), median("sse", REFERENCE, "tokens/s"),
                         lambda r: r >= 1))
    rows.append(_against("Scenario 4b: tokens/s through /v1/chat/completions ≥ 0.9 of Cog's "
                         "SSE on the same model (issue 38)",
                         median("openai_sse", COGSERVE, "tokens/s, /v1/chat/completions"),
                         median("openai_sse", COGSERVE, "tokens/s, Cog SSE"),
                         lambda r: r >= 0.9))
    rows.append(_against("Scenario 4b: time to first token through /v1/chat/completions "
                         "≤ 1.1x Cog's SSE (issue 38)",
                         median("openai_sse", COGSERVE,
                                "time to first token, /v1/chat/completions"),
                         median("openai_sse", COGSERVE, "time to first token, Cog SSE"),
                         lambda r: r <= 1.1))
    latency = median("json_7mib", COGSERVE, "latency")
    rows.append(_against("Scenario 6: 7 MiB JSON input latency ≤ 3x the floor's (issue 24)",
                         latency, median("json_7mib", FLOOR, "latency"), lambda r: r <= 3))
    rows.append(_against("Scenario 6: 7 MiB JSON input latency ≤ 0.6x the reference's "
                         "(issue 24)", latency, median("json_7mib", REFERENCE, "latency"),
                         lambda r: r <= 0.6))
    rows.append(_against("Scenario 7: cold start to READY ≤ 0.7x the reference's (issue 24)",
                         median("cold_start", COGSERVE, "process start to READY"),
                         median("cold_start", REFERENCE, "process start to READY"),
                         lambda r: r <= 0.7))

    v2_json = median("v2_json", COGSERVE, "successful req/s")
    rows.append(_against("Scenario 8: V2 JSON req/s ahead of MLServer (issue 7)", v2_json,
                         median("v2_json", MLSERVER, "successful req/s"), lambda r: r > 1))
    binary = median("v2_binary", COGSERVE, "successful req/s")
    rows.append(_against("Scenario 8: V2 binary req/s ≥ 5x V2 JSON req/s, cogserve (issue 7)",
                         binary, v2_json, lambda r: r >= 5))
    rows.append(_against("Scenario 8b: V2 binary req/s ≥ 0.7 of the floor's (issue 24)",
                         binary, median("v2_binary", FLOOR, "successful req/s"),
                         lambda r: r >= 0.7))

    rows += _pool_targets(results)
    rows += _baseline_targets(results, baseline or "the baseline")
    rows += _batch_targets(results)
    lines = ["| target | met | ratio |", "|---|---|---|"]
    for text, ok, ratio in rows:
        verdict = "not measured" if ok is None else ("**met**" if ok else "**not met**")
        lines.append(f"| {text} | {verdict} | {ratio} |")
    return lines


ONE_ROUND_NOISE = 0.10  # assumed when a single round gives no spread to judge by
MIN_NOISE = 0.02


def guarded_figures(scenario_key: str, outcome: Outcome) -> list[str]:
    """What `--baseline` guards in a scenario: its first figure, and CPU per prediction."""
    scenario = next((s for s in ALL if s.key == scenario_key), None)
    if scenario is None or not scenario.figures:
        return []
    names = [scenario.figures[0].name]
    names += [name for name in (PARENT_CPU, WORKER_CPU) if name in outcome.values]
    return names


def paired_ratios(ours: list[float], theirs: list[float], higher_is_better: bool) -> list[float]:
    """Round by round (the rounds are interleaved, so a burst of load hits both alike):
    how much better cogserve did than the baseline, above 1 better, below 1 worse."""
    pairs = [(a, b) for a, b in zip(ours, theirs, strict=False) if a > 0 and b > 0]
    return [a / b if higher_is_better else b / a for a, b in pairs]


def no_worse(ratios: list[float]) -> tuple[bool, float, float]:
    """(met, median ratio, noise): worse beyond noise is a median ratio under 1 - noise,
    where noise is half the spread of the per-round ratios (at least 2%, 10% if one round)."""
    mid = statistics.median(ratios)
    if len(ratios) == 1:
        noise = ONE_ROUND_NOISE
    else:
        noise = max(MIN_NOISE, (max(ratios) - min(ratios)) / 2)
    return mid >= 1 - noise, mid, noise


def _baseline_targets(results: Results, label: str) -> list[Row]:
    figures = {s.key: {f.name: f for f in s.figures} for s in ALL}
    rows: list[Row] = []
    for key, outcomes in results.items():
        base = outcomes.get(BASELINE)
        ours = outcomes.get(COGSERVE)
        if base is None or ours is None:
            continue
        for name in guarded_figures(key, ours):
            text = f"{key}: {name}, cogserve no worse than {label} beyond noise (issue 24)"
            figure = figures[key][name]
            ratios = paired_ratios(ours.values.get(name, []), base.values.get(name, []),
                                   figure.higher_is_better)
            if not ratios:
                rows.append((text, None, "not measured"))
                continue
            met, mid, noise = no_worse(ratios)
            rows.append((text, met, f"{mid:.3f}x, above 1 better (rounds {min(ratios):.3f} – "
                                    f"{max(ratios):.3f}; noise ±{noise * 100:.0f}%)"))
    return rows


def _pool_targets(results: Results) -> list[Row]:
    """Scenario 9 (issue 14): --workers 2 vs 1, and a queue instead of 409s."""
    two = _median(results, "cpu_pool", COGSERVE, "successful req/s")
    one = _median(results, "cpu_pool", COGSERVE_ONE_WORKER, "successful req/s")
    rows: list[Row] = [(
        "Scenario 9: --workers 2 ≥ 1.8x --workers 1 successful req/s (issue 14)",
        None if two is None or not one else two >= 1.8 * one,
        f"{two / one:.2f}x" if two is not None and one else "not measured")]
    errors = results.get("cpu_pool", {}).get(COGSERVE, Outcome()).values.get("non-2xx")
    rows.append(("Scenario 9: zero non-2xx with --queue-size 64 (issue 14)",
                 None if not errors else max(errors) == 0,
                 f"non-2xx in all rounds: {int(sum(errors))}" if errors else "not measured"))
    return rows


def _batch_targets(results: Results) -> list[tuple[str, bool | None, str]]:
    """Scenario 11 (issue 26): @batch against the same model unbatched and LitServe's
    batching, with each one's p99."""
    figure, p99 = "successful req/s", "p99, all responses"
    ours = _median(results, "mlp_batch", COGSERVE, figure)
    rows: list[tuple[str, bool | None, str]] = []
    for system, factor, name in ((COGSERVE_UNBATCHED, 2.5, "cogserve unbatched"),
                                 (LITSERVE, 1.2, "LitServe with batching")):
        theirs = _median(results, "mlp_batch", system, figure)
        ratio = "not measured"
        if ours is not None and theirs:
            ratio = (f"{ours / theirs:.2f}x; p99 {_median(results, 'mlp_batch', COGSERVE, p99):.3g}"
                     f" vs {_median(results, 'mlp_batch', system, p99):.3g} ms")
        rows.append((f"Scenario 11: @batch ≥ {factor}x {name}, successful req/s (issue 26)",
                     None if ours is None or not theirs else ours >= factor * theirs, ratio))
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
           seconds: float, started: datetime.datetime, load_before: str,
           load_after: str = "", baseline: str | None = None) -> str:
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
        f"{load_before}" + (f", after: {load_after}" if load_after else ""),
        *([f"- baseline: {baseline} (`--baseline`), run as one more system, interleaved"]
          if baseline else []),
        f"- Python: {_python_version()}",
        f"- rounds: {rounds} per system, interleaved after a warm-up, the order rotated "
        "each round (A B C, B C A, ...); "
        f"rate runs last {seconds:g} s each; load generator wrk (1 thread) for rates, "
        "http.client for streams, large bodies and cold starts",
        "- all servers on 127.0.0.1, client and servers on the same machine",
        "",
        "## Targets",
        "",
        *targets(results, baseline),
        "",
        "## All figures",
        "",
        "Median over the rounds; spread is the lowest and highest round. The last column is "
        "cogserve's median divided by that system's: above 1 is better for cogserve where "
        "higher is better, below 1 where lower is better. The floor is a bare ASGI app on "
        "the same HTTP server cogserve uses (uvicorn + httptools + uvloop) that answers a "
        "constant body: what the HTTP layer alone allows. CPU per prediction is the "
        "server's user+system time (/proc) over the measured run, divided by its successful "
        "responses: on a shared machine it is steadier than req/s."
        + (" The baseline / system column compares the baseline the same way." if baseline
           else ""),
        "",
        *table(scenarios, results, baseline),
        "",
    ]
    return "\n".join(lines)
