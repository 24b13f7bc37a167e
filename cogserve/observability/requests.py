"""Watch every HTTP request once, around the router: metrics, the access log, traces.

One wrapper sees the status the response started with and the time to its last byte,
so the route handlers stay unaware of it. The access log is one structured line per
request (method, route template, status, duration, prediction id) at INFO; probes
(health checks, readiness) and metric scrapes are logged at DEBUG so they do not flood
the log.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from cogserve.http.asgi import Message, Receive, Scope, Send
from cogserve.http.responses import PREDICTION_KEY
from cogserve.http.routing import ROUTE_KEY

if TYPE_CHECKING:
    from cogserve.http.app import Handler
    from cogserve.observability.metrics import Metrics
    from cogserve.observability.tracing import Tracing

access_log = logging.getLogger("cogserve.access")

QUIET_ROUTES = frozenset({"/health-check", "/metrics", "/v2/health/live", "/v2/health/ready",
                          "/v2/models/{model_name}/ready",
                          "/v2/models/{model_name}/versions/{model_version}/ready"})


class RequestObserver:
    """Passed to the `App`, which puts it around its router (`around`) as `App.handle`."""

    def __init__(self) -> None:
        self.inner: Handler | None = None  # the router (`App.respond`)
        self.metrics: Metrics | None = None  # set once built (after the worker started)
        self.tracing: Tracing | None = None  # set when OpenTelemetry tracing is on

    def around(self, respond: Handler) -> RequestObserver:
        """Observe `respond`, the app's router. The request's route is already matched: its
        template (`/predictions/{prediction_id}`) is in the scope (`ROUTE_KEY`)."""
        self.inner = respond
        return self

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        # no answer started: the client went away first (a sync prediction's client that
        # disconnects); logged and counted as nginx does, 499 "client closed request"
        status = 499

        async def observed_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        route: str = scope[ROUTE_KEY].template
        tracing = self.tracing
        traced = None  # probes and scrapes are not traced: they would bury the traces
        if tracing is not None and route not in QUIET_ROUTES:
            traced = tracing.start_request(scope)
        try:
            assert self.inner is not None
            await self.inner(scope, receive, observed_send)
        finally:
            seconds = time.perf_counter() - started
            method = scope["method"]
            if self.metrics is not None:
                self.metrics.observe_request(route, method, status, seconds)
            level = logging.DEBUG if route in QUIET_ROUTES else logging.INFO
            if access_log.isEnabledFor(level):
                _log_access(level, scope, route, method, status, seconds)
            if tracing is not None and traced is not None:
                tracing.end_request(traced, route, status)


def _log_access(level: int, scope: Scope, route: str, method: str, status: int,
                seconds: float) -> None:
    prediction = scope.get(PREDICTION_KEY)
    ident = prediction.id if prediction is not None else None
    fields = {"method": method, "path": route, "status": status,
              "duration_s": round(seconds, 6), "prediction_id": ident}
    # makeRecord + handle is Logger.log without the caller lookup (which walks the stack)
    access_log.handle(access_log.makeRecord(
        access_log.name, level, __file__, 0, "%s %s %d %.1f ms%s",
        (method, route, status, seconds * 1000, f" prediction {ident}" if ident else ""),
        None, extra={"fields": fields}))
