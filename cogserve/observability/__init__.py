"""Metrics, access logs and traces for `cogserve serve`: what an operator watches.

`metrics_feed` subscribes the Prometheus feed (`metrics.py`) to runtime events before the
service starts (`assembly.wire`), unless metrics are off; `build` makes the
`RequestObserver` the app's request handling goes through, counted by that feed, and the
feed's `GET /metrics` route (or it has a port of its own); `assembly.build_app` passes both
to the `App`. Nothing here is
imported by the worker or by the runtime.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cogserve.http.asgi import Receive, Scope, Send
from cogserve.runtime.events import RuntimeEvent
from cogserve.runtime.settings import ObservabilityOptions

if TYPE_CHECKING:
    from cogserve.http.app import Handler
    from cogserve.observability.metrics import Metrics
    from cogserve.observability.requests import RequestObserver
    from cogserve.runtime.service import Service


@dataclass(frozen=True)
class Observability:
    """What the app is built with: the observer around every request, and the routes
    observability adds (`/metrics`, unless metrics are off or on a port of their own)."""

    observer: RequestObserver
    routes: dict[str, dict[str, Handler]]


def metrics_feed(service: Service, options: ObservabilityOptions) -> MetricsFeed | None:
    """The metrics' subscription to runtime events (None: metrics are off). Made before
    the service starts, so the first worker start and setup are counted; it imports
    nothing of the HTTP stack, which `serve` imports while the worker starts."""
    if not options.metrics:
        return None
    feed = MetricsFeed(service, options)
    service.events.subscribe(feed, MetricsFeed.EVENTS)
    if options.metrics_port is not None:
        service.on_drain.append(feed.close_port)
    return feed


def build(service: Service, feed: MetricsFeed | None) -> Observability:
    """The observer around the app's requests (with traces when asked for), counted by
    `feed`, and its route."""
    from cogserve.observability.requests import RequestObserver
    from cogserve.process import spans

    observer = RequestObserver()
    routes: dict[str, dict[str, Handler]] = {}
    if spans.wanted():  # else OpenTelemetry is never imported
        from cogserve.observability.tracing import Tracing

        observer.tracing = Tracing(service)
        service.on_drain.append(_flush_spans)
    if feed is not None:
        feed.attach(observer)
        if feed.options.metrics_port is None:
            routes["/metrics"] = {"GET": feed.endpoint}
    return Observability(observer, routes)


class MetricsFeed:
    """Builds `Metrics` on the first worker start and passes every runtime event on.

    Built then, prometheus_client's import (28 ms) overlaps the worker's own start
    instead of delaying it. A worker whose environment is still being built (minutes)
    starts late: a scrape before then builds the metrics itself.
    """

    # what `Metrics.on_event` counts (listed here: metrics.py imports prometheus_client);
    # a prediction's creation is not among them, so it costs metrics nothing
    EVENTS = (RuntimeEvent.WORKER_STARTED, RuntimeEvent.WORKER_EXITED,
              RuntimeEvent.SETUP_FINISHED, RuntimeEvent.PREDICTION_COMPLETED,
              RuntimeEvent.BATCH_FORMED, RuntimeEvent.WEBHOOK_ATTEMPT, RuntimeEvent.UPLOAD,
              RuntimeEvent.DOWNLOADS, RuntimeEvent.SSE_CLIENT, RuntimeEvent.V2_INFERENCE)

    def __init__(self, service: Service, options: ObservabilityOptions) -> None:
        self.service = service
        self.observer: RequestObserver | None = None  # the app's, once it is built
        self.options = options
        self.metrics: Metrics | None = None
        self.port_server: Any = None  # the separate port's WSGI server

    def __call__(self, event: RuntimeEvent, fields: dict[str, Any]) -> None:
        if self.metrics is None:
            if event is not RuntimeEvent.WORKER_STARTED:
                return
            self._build()
        assert self.metrics is not None
        self.metrics.on_event(event, fields)

    def _build(self) -> None:
        from cogserve.observability.metrics import Metrics

        self.metrics = Metrics(self.service)
        if self.observer is not None:
            self.observer.metrics = self.metrics
        if self.options.metrics_port is not None:
            from prometheus_client import start_http_server

            self.port_server, _ = start_http_server(
                self.options.metrics_port, self.options.metrics_host,
                registry=self.metrics.registry)

    def attach(self, observer: RequestObserver) -> None:
        """The app's observer counts requests in these metrics, once they are built (the
        worker may have started before the app was)."""
        self.observer = observer
        observer.metrics = self.metrics

    async def endpoint(self, scope: Scope, receive: Receive, send: Send) -> None:
        """GET /metrics on the API port."""
        from cogserve.observability.metrics import CONTENT_TYPE

        if self.metrics is None:
            self._build()
        assert self.metrics is not None
        if self.metrics.gpu is not None:  # NVML's calls take milliseconds: off the loop
            body = await asyncio.to_thread(self.metrics.exposition)
        else:
            body = self.metrics.exposition()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", CONTENT_TYPE.encode())]})
        await send({"type": "http.response.body", "body": body})

    async def close_port(self) -> None:
        if self.port_server is not None:
            self.port_server.shutdown()
            self.port_server.server_close()


async def _flush_spans() -> None:
    from cogserve.process import spans

    spans.flush()
