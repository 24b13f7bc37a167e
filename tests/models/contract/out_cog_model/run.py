"""A cog.BaseModel output: a dataclass with optional fields and a file."""

import tempfile
from typing import Optional

from cog import BaseModel, BaseRunner, Path


class Result(BaseModel):
    label: str
    score: float
    tags: list[str]
    note: Optional[str] = None
    file: Optional[Path] = None


class Runner(BaseRunner):
    def run(self, with_file: bool = False) -> Result:
        path = None
        if with_file:
            path = Path(tempfile.mkdtemp()) / "x.txt"
            path.write_text("attached")
        return Result(label="cat", score=1, tags=["a", "b"], file=path)
