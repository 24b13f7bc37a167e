"""The decode model with cogserve's @batch: one run() call for up to 32 waiting requests.

Served with `cogserve serve bench/models/image_decode --predictor batched.py:Runner`;
the limits are those of issue 35's GPU measurement (max_size=32, max_wait=2 ms).
"""

from cog import BaseRunner, Input, Path, batch
from decode import Meter


class Runner(BaseRunner):
    def setup(self) -> None:
        self.meter = Meter()

    @batch(max_size=32, max_wait=0.002)
    def run(self, image: list[Path],
            stats: list[bool] = Input(default=False)) -> list[str]:
        if any(stats):
            return [self.meter.report() if s else "" for s in stats]
        return self.meter.decode_files(image)
