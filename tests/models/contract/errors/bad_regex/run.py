"""A regex that does not compile."""

from cog import BaseRunner, Input


class Runner(BaseRunner):
    def run(self, text: str = Input(regex="([a-z")) -> str:
        return text
