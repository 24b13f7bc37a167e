"""The GPU scenario's model as a Cog model, one image per predict() call (the reference
and cogserve unbatched)."""

from cog import BaseModel, BasePredictor, Path
from net import Classifier, read


class Output(BaseModel):
    classes: list[int]
    probabilities: list[float]


class Predictor(BasePredictor):
    def setup(self) -> None:
        self.net = Classifier()

    def predict(self, image: Path) -> Output:
        return Output(**self.net.top5([read(image)])[0])
