"""A CPU-bound sync model: each prediction burns ~20 ms of CPU time in pure Python."""

import time

from cog import BaseRunner

WORK_S = 0.020


class Runner(BaseRunner):
    def run(self, x: int = 0) -> int:
        end = time.process_time() + WORK_S  # CPU time: the same work however busy the machine
        n = x
        while time.process_time() < end:
            for _ in range(1000):
                n = (n * 1103515245 + 12345) & 0x7FFFFFFF
        return n
