"""How long the parent spends validating a typical 10-field input, in microseconds.

Compare with a prediction round trip through the server (hundreds of microseconds):
validation must be a small fraction of it. Run: `.venv/bin/python bench/validation_speed.py`;
add `--round-trip` to also time sync predictions of examples/hello-world over HTTP.
"""

from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import timeit
from typing import Literal

from cogserve.model.schema import openapi_document
from cogserve.model.signature import read_signature
from cogserve.model.validation import InputValidator
from cogserve.sdk.runner import Input
from cogserve.sdk.types import Path


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


def round_trip(count: int = 300) -> None:
    """Mean wall time of a sync prediction, client included, on one keep-alive connection."""
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    example = pathlib.Path(__file__).parent.parent / "examples" / "hello-world"
    server = subprocess.Popen([sys.executable, "-m", "cogserve.cli", "serve", str(example),
                               "--host", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    if client.get("/health-check").json()["status"] == "READY":
                        break
                except httpx.HTTPError:
                    time.sleep(0.05)
            body = {"input": {"name": "bench", "times": 2}}
            for _ in range(30):
                client.post("/predictions", json=body)
            started = time.perf_counter()
            for _ in range(count):
                client.post("/predictions", json=body)
            elapsed = time.perf_counter() - started
        print(f"prediction round trip: {elapsed / count * 1e6:.0f} µs per request")
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


if __name__ == "__main__":
    main()
    if "--round-trip" in sys.argv:
        round_trip()
