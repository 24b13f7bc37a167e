"""The deprecated names: BasePredictor and predict()."""

from cog import BasePredictor, Input


class Predictor(BasePredictor):
    def predict(self, text: str = Input(description="text", default="old")) -> str:
        return f"predicted {text}"
