import time
from collections.abc import Iterator

from cog import BaseRunner, Input


class Runner(BaseRunner):
    """Yields `n` tokens, printing a log line before each one."""

    def run(
        self,
        n: int = Input(default=3, ge=0),
        delay: float = Input(default=0.0, ge=0),
        text: str = "tok",
        fail: bool = False,
    ) -> Iterator[str]:
        for i in range(n):
            print(f"log {i}")
            yield f"{text}{i}"
            if delay:
                time.sleep(delay)
        if fail:
            raise ValueError("hook failure")
