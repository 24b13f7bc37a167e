"""setup() raises: the prediction never runs."""

from cog import BaseRunner


class Runner(BaseRunner):
    def setup(self) -> None:
        raise RuntimeError("weights are corrupt")

    def run(self) -> str:
        return "x"
