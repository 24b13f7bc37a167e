"""What metrics and the access log add to one request, in microseconds of CPU.

The app's real request observer, metrics registry and log formatter around a stand-in
route that emits a prediction's created/completed events and answers, called in a loop
in-process (no sockets, no worker): the best of 7 runs of 20,000 requests, so a busy
machine inflates the figures less than it does an end-to-end A/B. Compare with a no-op
prediction round trip (~250 us, scenario 1). Run: `.venv/bin/python bench/observability_cost.py`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from cogserve.cli.main import _Formatter
from cogserve.http.app import App
from cogserve.http.cog_routes import CogRoutes
from cogserve.http.responses import PREDICTION_KEY
from cogserve.model.config import ModelConfig
from cogserve.observability import ObservabilityOptions, build
from cogserve.runtime.events import RuntimeEvent
from cogserve.runtime.prediction import Prediction
from cogserve.runtime.service import Service
from cogserve.runtime.settings import Settings

REQUESTS = 20_000
RUNS = 7
VARIANTS = (("metrics off, access log off", False, logging.WARNING),
            ("metrics on, access log off", True, logging.WARNING),
            ("metrics off, access log on", False, logging.INFO),
            ("metrics on, access log on", True, logging.INFO))


async def measure(metrics: bool, level: int, folder: Path) -> float:
    logging.getLogger("cogserve").setLevel(level)
    service = Service(ModelConfig(directory=folder, predict_ref="run.py:Runner"), Settings())
    prediction = Prediction("abcdefghijabcdefghijabcdef", {})
    prediction.mark_started()
    prediction.succeed("ok", 0.0001)

    async def route(scope: dict[str, Any], receive: Any, send: Any) -> None:
        scope[PREDICTION_KEY] = prediction
        service.events.emit(RuntimeEvent.PREDICTION_CREATED, prediction=prediction, message={})
        service.events.emit(RuntimeEvent.PREDICTION_COMPLETED, prediction=prediction)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    watch = build(service, ObservabilityOptions(metrics=metrics))
    app = App(service, CogRoutes(service, 1024, lambda: None),
              routes={"/predictions": {"GET": route}, **watch.routes}, observer=watch.observer)
    service.events.emit(RuntimeEvent.WORKER_STARTED, restart=False)  # builds the registry
    scope = {"type": "http", "method": "GET", "path": "/predictions", "headers": []}

    async def send(message: dict[str, Any]) -> None:
        pass

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    best = float("inf")
    for _ in range(RUNS):
        started = time.perf_counter()
        for _ in range(REQUESTS):
            await app(dict(scope), receive, send)
        best = min(best, (time.perf_counter() - started) / REQUESTS * 1e6)
    shutil.rmtree(service.tmp_root, ignore_errors=True)
    return best


async def main() -> None:
    root = logging.getLogger("cogserve")
    root.propagate = False
    with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w") as sink:
        handler = logging.StreamHandler(sink)
        handler.setFormatter(_Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.handlers[:] = [handler]
        figures = {label: await measure(metrics, level, Path(tmp))
                   for label, metrics, level in VARIANTS}
    base = figures[VARIANTS[0][0]]
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"per request, best of {RUNS} x {REQUESTS:,} (load average {load}):")
    for label, value in figures.items():
        print(f"  {label:30s} {value:6.2f} us  ({value - base:+.2f} us)")


if __name__ == "__main__":
    asyncio.run(main())
