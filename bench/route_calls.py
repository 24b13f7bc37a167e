"""What routing and the request observer cost per request: calls and CPU, in process.

The app as `assembly.build_app` builds it (Cog's routes, the playground, /metrics with its
registry built, the V2 mount) with Cog's handlers stubbed to a bare 200, so what is left
is the router, the observer and the metrics it records. For each request kind: the calls
cProfile counts per request (all, and Python functions only; deterministic, so a loaded
machine does not move them) and the best of 5 runs of CPU time per request. Run:
`.venv/bin/python -m bench.route_calls [requests]` (default 5000; as a module, because
bench/profile.py would shadow the standard library's `profile` that cProfile imports).
"""

from __future__ import annotations

import asyncio
import cProfile
import logging
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cogserve.assembly import build_app, wire
from cogserve.http.cog_routes import CogRoutes
from cogserve.model.config import ModelConfig
from cogserve.runtime.events import RuntimeEvent
from cogserve.runtime.service import Service
from cogserve.runtime.settings import Settings

REQUESTS = [("POST", "/predictions"), ("GET", "/predictions/abcdef"),
            ("POST", "/predictions/abcdef/cancel"), ("GET", "/health-check"),
            ("GET", "/v2/health/live"), ("GET", "/v2/models/{model}/ready"), ("GET", "/nope")]


async def _stub(self: Any, scope: Any, receive: Any, send: Any, *_: Any, **__: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


async def main(count: int) -> None:
    for name in ("create", "get", "cancel", "health_check", "root"):
        setattr(CogRoutes, name, _stub)
    logging.getLogger("cogserve").setLevel(logging.WARNING)
    folder = Path(tempfile.mkdtemp())
    service = Service(ModelConfig(directory=folder, predict_ref="run.py:Runner",
                                  train_ref="train.py:train"), Settings())
    app = build_app(wire(service), max_body=1024, on_shutdown=lambda: None)
    service.events.emit(RuntimeEvent.WORKER_STARTED, restart=False)  # the metrics registry

    async def send(message: Any) -> None:
        pass

    async def receive() -> Any:
        return {"type": "http.request", "body": b""}

    try:
        for method, path in REQUESTS:
            path = path.format(model=service.model_name)
            scope = {"type": "http", "method": method, "path": path, "headers": []}
            for _ in range(200):
                await app(dict(scope), receive, send)
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(count):
                await app(dict(scope), receive, send)
            profile.disable()
            stats: Any = pstats.Stats(profile)
            python = sum(v[0] for k, v in stats.stats.items() if k[0] != "~")
            best = float("inf")
            for _ in range(5):
                started = time.process_time()
                for _ in range(count):
                    await app(dict(scope), receive, send)
                best = min(best, (time.process_time() - started) / count * 1e6)
            shown = path.replace(service.model_name, "{model}")
            print(f"{method:4} {shown:30} calls/request {stats.total_calls / count:5.1f} "
                  f"(Python {python / count:4.1f})  CPU {best:5.1f} us")
    finally:
        shutil.rmtree(service.tmp_root, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000))
