"""A Path output and a list[Path] output are written by `cogserve predict` as files."""

import tempfile

from cog import BaseRunner, Path


class Runner(BaseRunner):
    def run(self, text: str = "hi") -> Path:
        out = Path(tempfile.mkdtemp()) / "result.txt"
        out.write_text(f"file says {text}")
        return out
