"""How long the parent spends validating a typical 10-field input, in microseconds.

Compare with a prediction round trip through the server (hundreds of microseconds):
validation must be a small fraction of it. Run: `.venv/bin/python bench/validation_speed.py`.
"""

from __future__ import annotations

import timeit
from typing import Literal

from cogserve.runner import Input
from cogserve.schema import openapi_document
from cogserve.signature import read_signature
from cogserve.types import Path
from cogserve.validation import InputValidator


def run(
    prompt: str = Input(description="prompt", max_length=2000),
    negative: str = Input(default="", max_length=2000),
    width: int = Input(default=512, ge=64, le=2048),
    height: int = Input(default=512, ge=64, le=2048),
    steps: int = Input(default=30, ge=1, le=100),
    guidance: float = Input(default=7.5, ge=0.0, le=20.0),
    scheduler: str = Input(default="ddim", choices=["ddim", "euler", "dpm"]),
    seed: int | None = None,
    image: Path | None = None,
    mode: Literal["fast", "slow"] = "fast",
) -> str:
    return prompt


GOOD = {"prompt": "a photo of a cat wearing a hat", "negative": "blurry", "width": 768,
        "height": 512, "steps": 25, "guidance": 6.5, "scheduler": "euler", "seed": 42,
        "image": "https://example.com/cat.png", "mode": "slow"}
BAD = {**GOOD, "width": 9999, "steps": "many", "scheduler": "zzz", "bogus": 1}


def main() -> None:
    validator = InputValidator(openapi_document(read_signature(run)))
    assert validator.validate(GOOD) == []
    assert len(validator.validate(BAD)) == 4
    for label, value in (("valid 10-field input", GOOD), ("invalid (4 errors)", BAD)):
        number = 20000
        best = min(timeit.repeat(lambda v=value: validator.validate(v), number=number, repeat=5))
        print(f"{label}: {best / number * 1e6:.2f} µs per validation")


if __name__ == "__main__":
    main()
