"""bench/: process cleanup and the verdicts RESULTS.md prints.

The bench itself is run by hand (`bench/run --quick`); these tests pin the two parts a
wrong answer would hide: servers that outlive the bench, and targets marked met when
they are not.
"""

from __future__ import annotations

import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bench import report  # noqa: E402
from bench.catalog import ALL  # noqa: E402
from bench.main import run_scenario  # noqa: E402
from bench.procs import Proc  # noqa: E402
from bench.scenarios import Context, Scenario  # noqa: E402
from bench.systems import Server, StartError  # noqa: E402

CHILD_IN_OWN_SESSION = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                         start_new_session=True)
print(child.pid, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_stop_ends_a_descendant_that_left_the_process_group(tmp_path: pathlib.Path) -> None:
    log = tmp_path / "server.log"
    proc = Proc([sys.executable, "-c", CHILD_IN_OWN_SESSION], log=log)
    try:
        deadline = time.monotonic() + 10
        while not log.read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.02)
        child = int(log.read_text().split()[0])
        assert os.getpgid(child) != proc.pid  # a group kill alone would miss it
        assert proc.rss_kib() > 0
    finally:
        proc.stop()
    assert not proc.alive()
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(child)


def _outcome(**figures: list[float]) -> report.Outcome:
    outcome = report.Outcome()
    for name, values in figures.items():
        outcome.values[name.replace("_", " ")] = values
    return outcome


def _noop(ours: float, ref: float, errors: float) -> report.Results:
    return {"noop_seq": {
        "cogserve": _outcome(**{"successful req/s": [ours] * 3, "non-2xx": [0.0, errors, 0.0]}),
        "reference": _outcome(**{"successful req/s": [ref] * 3, "non-2xx": [900.0] * 3}),
    }}


def _verdict(results: report.Results, target: str) -> str:
    row = next(line for line in report.targets(results) if target in line)
    return row.split("|")[2].strip()


def test_scenario_1_target_needs_four_times_the_reference_and_no_errors() -> None:
    target = "Scenario 1: cogserve ≥ 4x"
    assert _verdict(_noop(4100, 1000, 0), target) == "**met**"
    assert _verdict(_noop(3900, 1000, 0), target) == "**not met**"
    assert _verdict(_noop(5000, 1000, 1), target) == "**not met**"
    assert _verdict({}, target) == "not measured"


def test_cpu_per_prediction_targets_are_limits_on_cogserve_alone() -> None:
    results: report.Results = {"noop_seq": {"cogserve": _outcome(**{
        "parent CPU per prediction": [90.0, 95.0, 120.0],
        "worker CPU per prediction": [31.0, 35.0, 29.0]})}}
    assert _verdict(results, "parent CPU per prediction ≤ 100") == "**met**"
    assert _verdict(results, "worker CPU per prediction ≤ 30") == "**not met**"


def test_openai_streaming_targets_compare_v1_with_cogs_sse_on_one_server() -> None:
    def results(v1: float, sse: float, first_v1: float, first_sse: float) -> report.Results:
        return {"openai_sse": {"cogserve": _outcome(**{
            "tokens/s, /v1/chat/completions": [v1], "tokens/s, Cog SSE": [sse],
            "time to first token, /v1/chat/completions": [first_v1],
            "time to first token, Cog SSE": [first_sse]})}}

    rate, first = "through /v1/chat/completions ≥ 0.9", "first token through /v1"
    assert _verdict(results(9100, 10000, 11, 10), rate) == "**met**"
    assert _verdict(results(9100, 10000, 11, 10), first) == "**met**"
    assert _verdict(results(8900, 10000, 12, 10), rate) == "**not met**"
    assert _verdict(results(8900, 10000, 12, 10), first) == "**not met**"


def test_baseline_guard_pairs_interleaved_rounds_and_allows_their_noise() -> None:
    def results(ours: list[float], base: list[float]) -> report.Results:
        return {"noop_seq": {"cogserve": _outcome(**{"successful req/s": ours}),
                             "baseline": _outcome(**{"successful req/s": base})}}

    target = "noop_seq: successful req/s, cogserve no worse than"
    # a burst of load in round 2 hits both: paired, cogserve is 10% behind every round
    assert _verdict(results([900, 450, 900], [1000, 500, 1000]), target) == "**not met**"
    # rounds that disagree: the median ratio 0.97 is inside their spread
    assert _verdict(results([900, 1000, 970], [1000, 960, 1000]), target) == "**met**"
    assert _verdict(results([1000, 1000], [1000, 1000]), target) == "**met**"
    lower_better = {"noop_seq": {
        "cogserve": _outcome(**{"successful req/s": [1.0] * 3,
                                "parent CPU per prediction": [120.0, 121.0, 119.0]}),
        "baseline": _outcome(**{"successful req/s": [1.0] * 3,
                                "parent CPU per prediction": [100.0, 101.0, 99.0]})}}
    assert _verdict(lower_better, "noop_seq: parent CPU per prediction") == "**not met**"
    assert not any("cogserve no worse" in line for line in report.targets(_noop(1, 1, 0)))


def test_baseline_runs_right_after_cogserve_with_its_own_ratio_column() -> None:
    scenario = next(s for s in ALL if s.key == "noop_8clients")
    assert scenario.lineup(True) == ("cogserve", "baseline", "reference", "floor")
    assert scenario.lineup(False) == scenario.systems
    assert next(s for s in ALL if s.key == "cold_start_env").lineup(True) == ("cogserve",)
    results: report.Results = {"noop_8clients": {
        "cogserve": _outcome(**{"successful req/s": [3000.0]}),
        "baseline": _outcome(**{"successful req/s": [2000.0]}),
        "reference": _outcome(**{"successful req/s": [1000.0]})}}
    text = "\n".join(report.table([scenario], results, "cogserve at 48f67ce"))
    assert "baseline / system |" in text
    assert "| cogserve at 48f67ce | 2,000 |  | 1.50x |  |" in text
    assert "| reference (Cog 0.23.1 + coglet 0.23.1) | 1,000 |  | 3.00x | 2.00x |" in text


def test_failures_show_in_the_table_with_their_reason() -> None:
    scenario = next(s for s in ALL if s.key == "noop_seq")
    results: report.Results = {"noop_seq": {
        "cogserve": _outcome(**{"successful req/s": [3000.0, 3100.0]}),
        "reference": report.Outcome(note="failed: not ready after 60 s"),
    }}
    text = "\n".join(report.table([scenario], results))
    assert "| reference (Cog 0.23.1 + coglet 0.23.1) | failed [1] |" in text
    assert "1. failed: not ready after 60 s" in text
    assert "| cogserve | 3,050 | 3,000 – 3,100 |" in text


class _Launches(Scenario):
    """A scenario whose servers are counted, not run: what `run_scenario` starts,
    measures and stops, in order."""

    key = "launches"
    systems = ("cogserve", "litserve", "reference")
    relaunch_each_round = True

    def __init__(self, fails: set[str]) -> None:
        self.fails = fails
        self.events: list[str] = []

    def prepare(self, ctx: Context) -> None:
        pass

    def start(self, system: str, ctx: Context) -> Server:
        self.events.append(f"start {system}")
        if system in self.fails:
            raise StartError(f"{system} never got ready")
        events = self.events

        class Counted(Server):
            def stop(self) -> None:
                events.append(f"stop {self.system}")
        return Counted(system, "", None, 0.0)

    def warmup(self, server: Server, ctx: Context) -> None:
        self.events.append(f"warm {server.system}")

    def measure(self, server: Server, ctx: Context) -> dict[str, float]:
        self.events.append(f"measure {server.system}")
        return {"successful req/s": 1.0}


def test_a_relaunching_scenario_measures_each_round_on_a_server_started_for_it() -> None:
    # a C decode's speed is drawn per launch (FINDINGS, fourteenth session): a server
    # kept for every round would repeat one draw
    scenario = _Launches(fails={"reference"})
    results: report.Results = {}
    ctx = Context(wrk="", rounds=2, seconds=0.0, warmup_s=0.0, repeats=0)
    run_scenario(scenario, ctx, results, None)
    one = ["start {0}", "warm {0}", "measure {0}", "stop {0}"]
    assert scenario.events == [
        *(e.format("cogserve") for e in one), *(e.format("litserve") for e in one),
        "start reference",  # refused once, then left out
        *(e.format("litserve") for e in one), *(e.format("cogserve") for e in one)]
    assert results["launches"]["cogserve"].values["successful req/s"] == [1.0, 1.0]
    assert results["launches"]["reference"].note == "failed: reference never got ready"
