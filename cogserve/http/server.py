"""Run the ASGI app on uvicorn, with Cog's shutdown rules.

SIGTERM (unless --await-explicit-shutdown) and POST /shutdown both stop taking new
predictions, let in-flight ones finish, stop the worker, and exit 0. uvicorn's own
signal handling is replaced because it would drop async predictions that have no open
connection: `cogserve.cli.main` installs the handlers, before the worker starts and before this
module (and uvicorn) is imported, so a signal then stops the server as one later does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Generator
from typing import Any

import uvicorn

from cogserve.http.asgi import ASGIApp
from cogserve.http.connection import connection_class
from cogserve.http.limits import ConnectionLimits
from cogserve.process.heap import keep_freed_memory
from cogserve.runtime.service import Service
from cogserve.wire.states import Health

log = logging.getLogger("cogserve")


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield  # signals are handled by `cogserve.cli.main` (see the module's docstring)

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.started:  # one INFO line: where a new user points curl
            config = self.config
            host = f"[{config.host}]" if ":" in config.host else config.host
            log.info("listening on http://%s:%d", host, config.port)


async def _announce_ready(service: Service) -> None:
    """One INFO line when setup() has finished (or one ERROR line saying it failed)."""
    await service.ready.wait()
    if service.status is Health.READY:
        log.info("model ready: setup() succeeded; POST /predictions")
    elif not service.fatal_reason:  # a fatal reason was logged already, once
        log.error("setup() failed: the model cannot run predictions; GET /health-check "
                  "for its logs")


async def serve(app: ASGIApp, service: Service, stop: asyncio.Event, host: str, port: int,
                log_level: str = "warning", reload: bool = False) -> None:
    """Serve `app` until `stop` is set (POST /shutdown, or a signal: see the module's
    docstring), then stop the service."""
    keep_freed_memory()  # request bodies of megabytes: see cogserve.process.heap
    uv_config = uvicorn.Config(
        # ws="none": no route speaks WebSocket, and uvicorn's "auto" imported the websockets
        # package at every start (~13 ms of a ~290 ms cold start)
        app, host=host, port=port, loop="none", lifespan="on", ws="none",
        http=connection_class(ConnectionLimits.from_env()),  # cogserve's own HTTP/1.1
        log_level=log_level, access_log=False, timeout_graceful_shutdown=5,
        server_header=False, date_header=True,
    )
    server = _Server(uv_config)
    loop = asyncio.get_running_loop()

    async def shutdown_when_asked() -> None:
        await stop.wait()
        service.begin_shutdown()
        await service.drain()
        server.should_exit = True

    watcher = loop.create_task(shutdown_when_asked())
    reloader = None
    if reload:
        from cogserve.runtime.reload import watch

        reloader = loop.create_task(watch(service, stop))
    announcer = loop.create_task(_announce_ready(service))
    try:
        await server.serve()
    finally:
        watcher.cancel()
        if reloader is not None:
            reloader.cancel()
        announcer.cancel()
        await service.stop()
        if server.started is False and not stop.is_set():
            raise SystemExit(1)

