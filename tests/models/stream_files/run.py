"""A @streaming model whose chunks are files (they arrive as data URLs), plus a train()."""

import tempfile
from collections.abc import Iterator

from cog import BaseRunner, Path, streaming


class Runner(BaseRunner):
    @streaming
    def run(self, n: int = 2) -> Iterator[Path]:
        for k in range(n):
            path = Path(tempfile.mkdtemp()) / f"chunk{k}.txt"
            path.write_text(f"file {k}")
            yield path


def train(steps: int = 1) -> str:
    return f"trained {steps}"
