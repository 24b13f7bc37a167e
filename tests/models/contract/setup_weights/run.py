"""setup(weights) receives COG_WEIGHTS, or None."""

from cog import BaseRunner


class Runner(BaseRunner):
    def setup(self, weights=None) -> None:
        self.weights = weights

    def run(self) -> str:
        return f"weights={self.weights}"
