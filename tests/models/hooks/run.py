import os
import time
from collections.abc import Iterator

from cog import BaseRunner, Input


def _wait_for(path: str) -> None:
    """Block until the test creates `path` (bounded, so a broken test cannot hang us)."""
    deadline = time.monotonic() + 60
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)


class Runner(BaseRunner):
    """Yields `n` tokens, printing a log line before each one.

    With `gate`, token k (k >= 1) waits for the file `{gate}{k}` and the run ends only
    once `{gate}{n}` exists: the test decides when each step happens, so what it
    asserts about deliveries does not depend on timing.
    """

    def run(
        self,
        n: int = Input(default=3, ge=0),
        delay: float = Input(default=0.0, ge=0),
        text: str = "tok",
        fail: bool = False,
        gate: str = "",
    ) -> Iterator[str]:
        for i in range(n):
            if gate and i:
                _wait_for(f"{gate}{i}")
            print(f"log {i}")
            yield f"{text}{i}"
            if delay:
                time.sleep(delay)
        if gate:
            _wait_for(f"{gate}{n}")
        if fail:
            raise ValueError("hook failure")
