"""run() returns values that do not match its declared type."""

from cog import BaseModel, BaseRunner


class Result(BaseModel):
    label: str
    score: float


class Runner(BaseRunner):
    def run(self, kind: str = "int") -> Result:
        if kind == "int":
            return 5  # type: ignore[return-value]
        if kind == "missing_field":
            return {"label": "x"}  # type: ignore[return-value]
        return Result(label="ok", score="high")  # type: ignore[arg-type]
