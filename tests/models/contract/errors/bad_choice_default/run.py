"""The default is not one of the choices."""

from cog import BaseRunner, Input


class Runner(BaseRunner):
    def run(self, color: str = Input(default="pink", choices=["red", "blue"])) -> str:
        return color
