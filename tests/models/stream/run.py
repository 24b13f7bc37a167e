"""A @streaming token model: one log line (and optionally a metric) per token."""

import os
import sys
import time
from collections.abc import Iterator

from cog import BaseRunner, Input, streaming


class Runner(BaseRunner):
    @streaming
    def run(
        self,
        n: int = Input(default=3, ge=0),
        delay: float = Input(default=0.0, ge=0),
        size: int = Input(default=0, ge=0),
        fail_at: int = -1,
        gate: str = "",
        metric: bool = False,
        quiet: bool = False,
    ) -> Iterator[str]:
        for k in range(n):
            if gate and k == 1:
                # the client must have seen tok0 before this token can be made
                deadline = time.monotonic() + 20
                while not os.path.exists(gate) and time.monotonic() < deadline:
                    time.sleep(0.01)
                if not os.path.exists(gate):
                    yield "gate-timeout"
                    return
            if k == fail_at:
                raise RuntimeError("stream broke")
            if not quiet:
                print(f"log line {k}")
                if k == 0:
                    print("to stderr", file=sys.stderr)
            if metric:
                self.record_metric("tokens", 1, mode="incr")
            if delay:
                time.sleep(delay)
            yield f"tok{k}" + "x" * size
