"""setup(weights: Path) receives a local file: COG_WEIGHTS as a path, or downloaded."""

from typing import Optional

from cog import BaseRunner, Path


class Runner(BaseRunner):
    def setup(self, weights: Optional[Path] = None) -> None:
        self.weights = weights

    def run(self) -> str:
        if self.weights is None:
            return "no weights"
        return f"{type(self.weights).__name__}:{self.weights.read_text()}"
