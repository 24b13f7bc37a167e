"""The model of the batching bench scenario: a two-layer MLP in numpy, float32.

2048 -> 4096 (ReLU) -> 1000, weights ~48 MB. One item is bound by reading the weights
(~1 ms here); 16 items read them once for all (~5 ms), which is what batching gains on
a CPU. An input is a seed that picks one of 64 fixed input vectors, so requests stay
small and the serving, not JSON, is measured. Shared by the Cog model, the batched
cogserve model and the LitServe app.

BLAS gets one thread in every system: on the bench's small shared machine two threads
per matmul made one item 5x slower (31 ms against 5.8 ms, 16 items 222 ms against 29).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads BLAS
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

IN, HIDDEN, OUT = 2048, 4096, 1000


class MLP:
    def __init__(self, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.w1 = (rng.standard_normal((IN, HIDDEN), dtype=np.float32) / np.sqrt(IN)).astype(
            np.float32)
        self.w2 = (rng.standard_normal((HIDDEN, OUT), dtype=np.float32) / np.sqrt(HIDDEN)
                   ).astype(np.float32)
        self.inputs = rng.standard_normal((64, IN), dtype=np.float32)

    def classify(self, seeds: list[int]) -> list[int]:
        """The class of each seed's input vector, computed for all of them at once."""
        rows = self.inputs[np.asarray(seeds, dtype=np.int64) % len(self.inputs)]
        hidden = np.maximum(rows @ self.w1, 0)
        return [int(c) for c in (hidden @ self.w2).argmax(axis=1)]
