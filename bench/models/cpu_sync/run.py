"""Bench scenario 9: a sync model whose run() is ~20 ms of pure-Python CPU work."""

from cog import BasePredictor
from work import ITERATIONS, work


class Predictor(BasePredictor):
    def predict(self, n: int = ITERATIONS) -> int:
        return work(n)
