"""Sum a float32 tensor of 1,000,000 elements: the V2 large-tensor benchmark model."""

import numpy as np
from cog import BaseRunner, Tensor


class Runner(BaseRunner):
    def run(self, x: Tensor[np.float32, (1_000_000,)]) -> float:
        return float(x.sum(dtype=np.float64))
