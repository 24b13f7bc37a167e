"""The MLP as a Cog model, one request per predict() call (Cog and cogserve unbatched)."""

from cog import BasePredictor, Input
from mlp import MLP


class Predictor(BasePredictor):
    def setup(self) -> None:
        self.mlp = MLP()

    def predict(self, seed: int = Input(default=0, ge=0)) -> int:
        return self.mlp.classify([seed])[0]
