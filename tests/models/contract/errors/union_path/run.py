"""A union with Path is not allowed."""

from cog import BaseRunner, Path


class Runner(BaseRunner):
    def run(self, source: Path | str) -> str:
        return str(source)
