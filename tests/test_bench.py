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
from bench.procs import Proc  # noqa: E402
from bench.scenarios import ALL  # noqa: E402

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


def test_scenario_1_target_needs_twice_the_reference_and_no_errors() -> None:
    assert _verdict(_noop(2100, 1000, 0), "Scenario 1") == "**met**"
    assert _verdict(_noop(1900, 1000, 0), "Scenario 1") == "**not met**"
    assert _verdict(_noop(5000, 1000, 1), "Scenario 1") == "**not met**"
    assert _verdict({}, "Scenario 1") == "not measured"


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
