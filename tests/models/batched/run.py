"""A @batch model for the batching tests: it records every call it gets.

Each run() call appends one JSON line to the file named by BATCH_LOG: the worker's pid
and the texts of its batch in order (train() appends its text under "train"). A member
with `gate` set holds the call until that file exists, so a test can keep the worker
busy while the next batch forms; `fail` "item" makes that member's output an exception
object, "batch" makes the call raise.
"""

import json
import os
import pathlib
import time

from cogserve import BaseRunner, Input, batch, current_scope, streaming


def _record(entry: dict) -> None:
    with open(os.environ["BATCH_LOG"], "a") as log:
        log.write(json.dumps({"pid": os.getpid(), **entry}) + "\n")


class Runner(BaseRunner):
    @streaming  # SSE per request: start, logs, metrics, completed
    @batch(max_size=4, max_wait=0.05)
    def run(self, text: list[str], gate: list[str] = Input(default=""),
            fail: list[str] = Input(default="", choices=["", "item", "batch"])) -> list[str]:
        _record({"texts": text})
        print(f"batch of {len(text)}")
        current_scope().record_metric("batch_size", len(text))
        if "batch" in fail:
            raise RuntimeError(f"the whole batch failed ({len(text)} items)")
        for path in filter(None, gate):
            deadline = time.monotonic() + 60
            while not pathlib.Path(path).exists() and time.monotonic() < deadline:
                time.sleep(0.005)
        return [ValueError(f"no output for {t}") if f == "item" else t.upper()
                for t, f in zip(text, fail, strict=True)]


def train(text: str) -> str:
    _record({"train": text})
    return f"trained {text}"
