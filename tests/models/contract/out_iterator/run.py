"""An Iterator output: items are sent as they are produced."""

import time
from collections.abc import Iterator

from cog import BaseRunner


class Runner(BaseRunner):
    def run(self, n: int = 3, pause: float = 0.0) -> Iterator[int]:
        for i in range(n):
            print(f"yielding {i}")
            yield i * 10
            time.sleep(pause)
