"""The MLP with cogserve's @batch: one run() call for up to 16 waiting requests.

Served with `cogserve serve bench/models/mlp --predictor batched.py:Runner`; its API
and schema are those of run.py's (one `seed` in, one class out).
"""

from cog import BaseRunner, Input, batch
from mlp import MLP


class Runner(BaseRunner):
    def setup(self) -> None:
        self.mlp = MLP()

    @batch(max_size=16, max_wait=0.005)
    def run(self, seed: list[int] = Input(default=0, ge=0)) -> list[int]:
        return self.mlp.classify(seed)
