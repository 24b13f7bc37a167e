"""No-op sync model: the round trip with nothing else in it."""

from cog import BaseRunner


class Predictor(BaseRunner):
    def setup(self) -> None:
        pass

    def run(self, text: str = "x") -> str:
        return text
