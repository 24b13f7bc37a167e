"""A model written against Cog 0.8-0.16's SDK (pydantic-based), with names Cog 0.17
removed: it must load and run in cogserve as it is (tests/test_old_sdk.py)."""

from typing import Optional

from cog import BaseModel, File
from cog.base_predictor import BasePredictor
from cog.server.exceptions import CancelationException
from cog.server.scope import current_scope, emit_metric
from cog.types import Input, Weights
from pydantic import Field


class Output(BaseModel):  # pydantic's rules: Optional without default, order, Field()
    text: str
    note: Optional[str]
    score: float = Field(default=0.5, description="how sure")
    words: int
    weights: Optional[str]


class Predictor(BasePredictor):
    def setup(self, weights: Optional[Weights] = None) -> None:
        self.weights = weights
        assert issubclass(CancelationException, BaseException)

    def predict(
        self,
        text: str = Input(..., description="required, written the pydantic way"),
        handle: Optional[File] = Input(default=None, description="an old File input"),
    ) -> Output:
        emit_metric("old_metric", 1)
        current_scope().record_metric("new_metric", 2)
        content = handle.read().decode() if handle else ""
        return Output(text=text + content, words=len(text.split()), weights=self.weights)
