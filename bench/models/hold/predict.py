"""Sync model whose run() sleeps `seconds`: a prediction that holds the only slot."""

import time

from cog import BaseRunner


class Predictor(BaseRunner):
    def setup(self) -> None:
        pass

    def run(self, text: str = "x", seconds: float = 0.0) -> str:
        time.sleep(seconds)
        return text
