"""setup() leaves a file at $SETUP_MARKER, so a test can tell whether it ran."""

import os
import pathlib

from cog import BaseRunner, Input


class Runner(BaseRunner):
    def setup(self) -> None:
        pathlib.Path(os.environ["SETUP_MARKER"]).write_text("setup ran")

    def run(self, s: str, n: int = Input(default=1, ge=0)) -> str:
        return s * n
