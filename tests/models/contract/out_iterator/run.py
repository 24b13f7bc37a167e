"""An Iterator output: items are sent as they are produced.

After the first item it waits for the file named by `gate` (if any), so a test can
prove the first item reached the client while run() was still running.
"""

import os
import time
from collections.abc import Iterator

from cog import BaseRunner


class Runner(BaseRunner):
    def run(self, n: int = 3, gate: str = "") -> Iterator[int]:
        for i in range(n):
            print(f"yielding {i}")
            yield i * 10
            deadline = time.monotonic() + 30
            while gate and not os.path.exists(gate) and time.monotonic() < deadline:
                time.sleep(0.01)
