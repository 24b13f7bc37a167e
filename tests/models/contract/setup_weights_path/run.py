"""setup(weights: Path) receives COG_WEIGHTS as the string it is, as coglet hands it over."""

from typing import Optional

from cog import BaseRunner, Path


class Runner(BaseRunner):
    def setup(self, weights: Optional[Path] = None) -> None:
        self.weights = weights

    def run(self) -> str:
        if self.weights is None:
            return "no weights"
        return f"{type(self.weights).__name__}:{self.weights}"
