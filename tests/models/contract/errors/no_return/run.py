"""run() without a return annotation."""

from cog import BaseRunner


class Runner(BaseRunner):
    def run(self, text: str):
        return text
