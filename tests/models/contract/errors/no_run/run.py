"""A runner class without run() or predict()."""

from cog import BaseRunner


class Runner(BaseRunner):
    def setup(self) -> None:
        pass
