import pydantic
from cog import BasePredictor
from pydantic import BaseModel


class Output(BaseModel):
    pydantic: str
    doubled: int


class Predictor(BasePredictor):
    def predict(self, n: int = 2) -> Output:
        return Output(pydantic=pydantic.VERSION, doubled=n * 2)
