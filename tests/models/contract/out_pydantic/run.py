"""A pydantic BaseModel output."""

from typing import Optional

from cog import BaseRunner
from pydantic import BaseModel


class Result(BaseModel):
    label: str
    count: int
    note: Optional[str] = None


class Runner(BaseRunner):
    def run(self, label: str = "dog") -> Result:
        return Result(label=label, count=3)
