"""cog.yaml names Runner, but the class is called Model."""

from cog import BaseRunner


class Model(BaseRunner):
    def run(self) -> str:
        return "x"
