"""Reads an environment variable that cog.yaml `environment:` sets."""

import os

from cog import BaseRunner


class Runner(BaseRunner):
    def run(self) -> str:
        return f"{os.environ.get('GREETING')}|{os.environ.get('EMPTY')!r}"
