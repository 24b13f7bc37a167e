"""Inverts a grayscale image with a "model" loaded once in setup() from weights.pth."""

from cog import BasePredictor, Input, Path

import tinymodel


class Predictor(BasePredictor):
    def setup(self) -> None:
        self.invert = tinymodel.load("./weights.pth")

    def predict(self, image: Path = Input(description="An 8-bit binary PGM image")) -> Path:
        return tinymodel.write(self.invert(tinymodel.read(image)))
