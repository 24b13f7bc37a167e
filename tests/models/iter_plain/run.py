"""An Iterator model without @streaming: JSON collects the list, SSE is refused."""

from collections.abc import Iterator

from cog import BaseRunner


class Runner(BaseRunner):
    def run(self, n: int = 3) -> Iterator[str]:
        for k in range(n):
            print(f"plain {k}")
            yield f"p{k}"
