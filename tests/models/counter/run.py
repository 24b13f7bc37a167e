"""Counts its runs, so a test can tell whether a request ran the model again."""

import os
import time

from cog import BaseRunner

RUNS = [0]


def _wait_for(gate: str) -> None:
    deadline = time.monotonic() + 20
    while gate and not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.01)


class Runner(BaseRunner):
    def run(self, text: str = "x", gate: str = "", pad: int = 0) -> str:
        RUNS[0] += 1
        print(f"run {RUNS[0]}")
        _wait_for(gate)
        return f"{RUNS[0]}:{text}" + "." * pad


def train(text: str = "t") -> str:
    RUNS[0] += 1
    return f"trained {RUNS[0]}:{text}"
