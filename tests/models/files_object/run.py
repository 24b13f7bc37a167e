"""Files inside a structured output: a field, and a list field."""

import tempfile

from cog import BaseModel, BaseRunner, Path


class Output(BaseModel):
    image: Path
    extras: list[Path]
    note: str


class Runner(BaseRunner):
    def run(self, n: int = 2) -> Output:
        with tempfile.NamedTemporaryFile(suffix=".png", delete=False) as fh:
            fh.write(b"\x89PNG\r\n\x1a\nnot really")
        extras = []
        for i in range(n):
            with tempfile.NamedTemporaryFile(suffix=".txt", delete=False) as t:
                t.write(f"extra {i}".encode())
            extras.append(Path(t.name))
        named = Path(tempfile.mkdtemp()) / "notes.md"
        named.write_text("# notes")
        extras.append(named)
        return Output(image=Path(fh.name), extras=extras, note="ok")
