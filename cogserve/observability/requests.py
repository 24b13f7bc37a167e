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
from typing import TYPE_CHECKING, Any

from cogserve.http.responses import PREDICTION_KEY

if TYPE_CHECKING:
    from cogserve.http.app import App, Handler
    from cogserve.observability.metrics import Metrics

access_log = logging.getLogger("cogserve.access")

QUIET_ROUTES = frozenset({"/health-check", "/metrics", "/v2/health/live", "/v2/health/ready",
                          "/v2/models/{model_name}/ready",
                          "/v2/models/{model_name}/versions/{model_version}/ready"})


class RequestObserver:
    """Installed as `App.handle`; calls the router (`App.respond`) in between."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.inner: Handler = app.respond
        self.metrics: Metrics | None = None  # set once built (after the worker started)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        started = time.perf_counter()
        status = 500  # if the handler dies before it answers, uvicorn sends a 500

        async def observed_send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.inner(scope, receive, observed_send)
        finally:
            seconds = time.perf_counter() - started
            route = self.app.route_of(scope["path"])
            method = scope["method"]
            if self.metrics is not None:
                self.metrics.observe_request(route, method, status, seconds)
            level = logging.DEBUG if route in QUIET_ROUTES else logging.INFO
            if access_log.isEnabledFor(level):
                _log_access(level, scope, route, method, status, seconds)


def _log_access(level: int, scope: dict[str, Any], route: str, method: str, status: int,
                seconds: float) -> None:
    prediction = scope.get(PREDICTION_KEY)
    ident = prediction.id if prediction is not None else None
    fields = {"method": method, "path": route, "status": status,
              "duration_s": round(seconds, 6), "prediction_id": ident}
    access_log.log(level, "%s %s %d %.1f ms%s", method, route, status, seconds * 1000,
                   f" prediction {ident}" if ident else "", extra={"fields": fields})
