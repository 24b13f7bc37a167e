"""Async run() with two slots: each prediction's inputs and tempfiles stay in its own folder."""

import asyncio
import os
import tempfile

from cog import BaseModel, BaseRunner, Path


class Output(BaseModel):
    file: Path
    folder: str


class Runner(BaseRunner):
    async def run(self, p: Path, wait: float = 0.3) -> Output:
        await asyncio.sleep(wait)  # both predictions are in flight at once
        out = Path(tempfile.mkdtemp()) / f"upper-{p.stem}.txt"
        out.write_text(p.read_text().upper())
        assert os.path.dirname(out.parent) == str(p.parent), (out, p)
        return Output(file=out, folder=str(p.parent))
