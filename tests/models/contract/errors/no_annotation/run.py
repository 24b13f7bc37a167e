"""An input without a type annotation."""

from cog import BaseRunner


class Runner(BaseRunner):
    def run(self, text) -> str:
        return text
