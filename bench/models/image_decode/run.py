"""The decode model, one request per run() call (cogserve without @batch)."""

from cog import BasePredictor, Input, Path
from decode import Meter


class Predictor(BasePredictor):
    def setup(self) -> None:
        self.meter = Meter()

    def predict(self, image: Path,
                stats: bool = Input(default=False)) -> str:
        if stats:
            return self.meter.report()
        return self.meter.decode_files([image])[0]
