"""The GPU scenario's model with cogserve's @batch: one forward pass for up to 32
waiting images. Served with `cogserve serve bench/models/gpu_resnet --predictor
batched.py:Runner`; its API is predict.py's (one `image` in, the top 5 out)."""

from cog import BaseRunner, Path, batch
from net import Classifier, read
from predict import Output


class Runner(BaseRunner):
    def setup(self) -> None:
        self.net = Classifier()

    @batch(max_size=32, max_wait=0.002)
    def run(self, image: list[Path]) -> list[Output]:
        return [Output(**top) for top in self.net.top5([read(p) for p in image])]
