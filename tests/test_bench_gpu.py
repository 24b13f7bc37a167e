"""bench/gpu: the plan a GPU session runs and the check every answer passes.

The scenario itself needs a GPU (or `bench/gpu/run --smoke`, minutes); these pin the two
things a GPU session cannot fix afterwards: that the plan covers what issue 35 asks
(every system at 1, 2 and 4 workers, 1 to 128 clients, the reference), and that a wrong
answer is caught rather than counted.
"""

from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bench.gpu import measure  # noqa: E402


def test_the_gpu_plan_covers_every_system_worker_count_and_client_count() -> None:
    plan = measure.configs(smoke=False, workers=None, systems=None)
    cells = {(c.system, c.workers) for c in plan}
    for system in (measure.BATCHED, measure.LITSERVE, measure.PLAIN):
        assert {(system, n) for n in (1, 2, 4)} <= cells
    assert (measure.REFERENCE, 1) in cells
    clients = {n for c in plan for n in c.clients}
    assert {1, 32, 64, 128} <= clients
    assert plan[0].system == measure.BATCHED and plan[0].workers == 1  # the first measured
    only = measure.configs(smoke=False, workers=[2], systems=["litserve"])
    assert [(c.system, c.workers) for c in only] == [(measure.LITSERVE, 2)]


def test_an_answer_that_is_not_a_top5_is_refused() -> None:
    good = {"classes": [3, 1, 4, 1, 5], "probabilities": [0.5, 0.2, 0.1, 0.1, 0.05]}
    assert measure.check_top5(good, "x") == [3, 1, 4, 1, 5]
    for bad in ({"classes": [3, 1, 4, 1], "probabilities": [0.5, 0.2, 0.1, 0.1]},
                {"classes": [3, 1, 4, 1, 1000], "probabilities": good["probabilities"]},
                {"classes": good["classes"], "probabilities": [0.1, 0.2, 0.1, 0.1, 0.05]},
                [3, 1, 4, 1, 5]):
        with pytest.raises(measure.CheckError):
            measure.check_top5(bad, "x")


def test_the_table_says_nvml_was_absent_rather_than_zero() -> None:
    point = measure.Point(measure.BATCHED, 1, 32, 400.0, 70.0, 90.0, 0, 0, None, None, None,
                          [], 0.2, 1.1)
    table = measure.render([point], {"ceiling": {"batch 32, decode excluded": 3000.0}})
    row = next(line for line in table.splitlines() if line.startswith("| cogserve @batch"))
    assert "| n/a |" in row and "| 400 |" in row
    assert "batch 32, decode excluded: 3,000.0" in table
