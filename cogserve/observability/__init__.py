"""Metrics, access logs and traces for `cogserve serve`: what an operator watches.

`install` wraps the app's request handling in a `RequestObserver` and, unless metrics
are off, builds the Prometheus registry (`metrics.py`) and serves it at `GET /metrics`
or on a port of its own. Nothing here is imported by the worker or by the runtime.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cogserve.exceptions import DefinitionError

if TYPE_CHECKING:
    from cogserve.http.app import App


@dataclass(frozen=True)
class ObservabilityOptions:
    metrics: bool = True
    metrics_port: int | None = None  # serve /metrics here instead of on the API port
    metrics_host: str = "127.0.0.1"

    @classmethod
    def from_env(cls, *, metrics: bool | None = None, metrics_port: int | None = None,
                 host: str = "127.0.0.1") -> ObservabilityOptions:
        """Flags win over COGSERVE_METRICS (0/false/off turns metrics off) and
        COGSERVE_METRICS_PORT."""
        if metrics is None:
            metrics = os.environ.get("COGSERVE_METRICS", "1").strip().lower() not in (
                "0", "false", "off", "no")
        if metrics_port is None:
            raw = os.environ.get("COGSERVE_METRICS_PORT", "").strip()
            if raw:
                if not raw.isdigit() or not 0 < int(raw) < 65536:
                    raise DefinitionError(f"COGSERVE_METRICS_PORT={raw!r} is not a port number")
                metrics_port = int(raw)
        return cls(metrics=metrics, metrics_port=metrics_port, metrics_host=host)


def install(app: App, options: ObservabilityOptions) -> None:
    from cogserve.observability.requests import RequestObserver
    from cogserve.runtime.events import RuntimeEvent

    observer = RequestObserver(app)
    app.handle = observer
    if not options.metrics:
        return
    service = app.service
    state: dict[str, Any] = {}

    def feed(event: RuntimeEvent, fields: dict[str, Any]) -> None:
        metrics = state.get("metrics")
        if metrics is None:
            if event is not RuntimeEvent.WORKER_STARTED:
                return
            metrics = build()
        metrics.on_event(event, fields)

    def build() -> Any:
        """On the first worker start: prometheus_client's import then overlaps the
        worker's own start instead of delaying it."""
        from cogserve.observability.metrics import Metrics

        metrics = state["metrics"] = observer.metrics = Metrics(service)
        if options.metrics_port is not None:
            from prometheus_client import start_http_server

            server, _ = start_http_server(options.metrics_port, options.metrics_host,
                                          registry=metrics.registry)
            state["server"] = server
        return metrics

    service.events.subscribe(feed)
    if options.metrics_port is None:
        app.exact["/metrics"] = {"GET": _endpoint(state)}
    else:
        async def close_port() -> None:
            if "server" in state:
                state["server"].shutdown()
                state["server"].server_close()

        service.on_drain.append(close_port)


def _endpoint(state: dict[str, Any]) -> Any:
    async def metrics_endpoint(scope: dict[str, Any], receive: Any, send: Any) -> None:
        from cogserve.observability.metrics import CONTENT_TYPE

        metrics = state.get("metrics")
        body = metrics.exposition() if metrics is not None else b""
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", CONTENT_TYPE.encode())]})
        await send({"type": "http.response.body", "body": body})

    return metrics_endpoint
