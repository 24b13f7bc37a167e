"""A Path input whose default is a file shipped with the model (str or Path default)."""

from cog import BaseRunner, Input, Path


class Runner(BaseRunner):
    def run(
        self,
        a: Path = Input(default="sample.txt"),
        b: Path = Input(default=Path("sample.txt")),
    ) -> str:
        return f"{type(a).__name__} {a.read_text().strip()} | {type(b).__name__} {b.name}"
