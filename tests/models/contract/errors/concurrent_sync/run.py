"""@concurrent(max=2) on a sync run()."""

from cog import BaseRunner, concurrent


class Runner(BaseRunner):
    @concurrent(max=2)
    def run(self) -> str:
        return "x"
