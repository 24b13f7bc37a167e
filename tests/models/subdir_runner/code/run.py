import shared
from cog import BaseRunner


class Runner(BaseRunner):
    def run(self, s: str) -> str:
        return shared.greet(s)
