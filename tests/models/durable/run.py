"""Counts its runs in a file the test names, and can be held running until a gate file
exists: what the durable store's tests need to kill a server mid-prediction. `data`, a
file it ignores, is what makes a request big."""

import os
import time
from typing import Optional

from cog import BaseRunner, Path


class Runner(BaseRunner):
    def run(self, text: str = "x", runs: str = "", gate: str = "",
            data: Optional[Path] = None) -> str:
        if runs:  # one line per run, so a test can tell a prediction ran once
            with open(runs, "a") as out:
                out.write(text + "\n")
        deadline = time.monotonic() + 120
        while gate and not os.path.exists(gate) and time.monotonic() < deadline:
            time.sleep(0.01)
        return f"done:{text}"
