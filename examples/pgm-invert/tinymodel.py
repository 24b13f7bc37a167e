"""A tiny pure-Python "model" for the example: a pixel lookup table read from a weights
file, so the example needs no framework. Images are binary PGM (P5) files, readable
without any imaging library.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path


def load(weights: str) -> Callable[[tuple[int, int, bytes]], tuple[int, int, bytes]]:
    """Read the "weights" (a pixel lookup table's parameters) and return the model."""
    params = json.loads(Path(weights).read_text())
    table = bytes(params["offset"] - v if params["invert"] else v for v in range(256))

    def model(image: tuple[int, int, bytes]) -> tuple[int, int, bytes]:
        width, height, pixels = image
        return width, height, pixels.translate(table)

    return model


def read(path: Path) -> tuple[int, int, bytes]:
    data = Path(path).read_bytes()
    magic, width, height, maxval, pixels = data.split(maxsplit=4)
    if magic != b"P5" or int(maxval) != 255:
        raise ValueError("expected an 8-bit binary PGM (P5) image")
    return int(width), int(height), pixels[: int(width) * int(height)]


def write(image: tuple[int, int, bytes]) -> Path:
    width, height, pixels = image
    out = Path(tempfile.mkdtemp()) / "output.pgm"
    out.write_bytes(b"P5\n%d %d\n255\n" % (width, height) + pixels)
    return out
