"""Assemble the server: the Service, and the app with Cog's routes, their optional
features, V2 and the playground.

In two steps, so `serve` can start the worker before the HTTP stack is imported (that
import and the app's assembly, ~45 ms, then overlap the worker's own start):
`build_service` makes the runtime side (the Service, its webhook senders, the store's
recovery, the metrics' subscription to runtime events, which must see the first worker
start) and imports nothing of `cogserve.http`; `build_app` makes the ASGI app around it.
`build` does both, for callers that start the service from the app's lifespan.

Each feature lives in its own module and is wired in here, explicitly, when the app
is built, so `http/app.py` stays a router and the hot path pays nothing for features a
request does not use (a prediction without a webhook gets no sender; a model that
does not stream gets no SSE history). It sits above both front ends (`cogserve.http`,
`cogserve.v2`), so neither imports the other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cogserve import observability
from cogserve.model.config import ModelConfig
from cogserve.runtime import webhooks
from cogserve.runtime.service import Service
from cogserve.runtime.settings import ObservabilityOptions, Settings

if TYPE_CHECKING:
    from cogserve.http.app import App
    from cogserve.http.asgi import ASGIApp
    from cogserve.runtime.store.durable import Durable

WEBHOOK_DRAIN_SECONDS = 10.0
DEFAULT_MAX_BODY = 128 * 1024 * 1024


@dataclass(frozen=True)
class Assembled:
    """The service and what `build_service` wired to it that the app needs too."""

    service: Service
    webhooks: webhooks.Webhooks
    metrics: observability.MetricsFeed | None  # None: --no-metrics


def build(config: ModelConfig, settings: Settings, max_body: int = DEFAULT_MAX_BODY
          ) -> tuple[App, Service, asyncio.Event]:
    """The service, its app, and the event that asks the server to shut down. The
    prediction store (`settings.store`) is opened here: one that cannot be used raises
    `StoreError` before anything starts."""
    runtime = build_service(config, settings)
    stop = asyncio.Event()
    app = build_app(runtime, max_body=max_body, on_shutdown=stop.set)
    return app, runtime.service, stop


def build_service(config: ModelConfig, settings: Settings) -> Assembled:
    """The service, not started, wired (`wire`); the store is opened as in `build`."""
    return wire(Service(config, settings, durable=open_durable(config, settings)))


def open_durable(config: ModelConfig, settings: Settings) -> Durable | None:
    """The durable side of `--store` (None for `memory`); its keys in a shared store
    are the model's name (`Service.model_name`)."""
    from cogserve.runtime.store import backends

    return backends.open_durable(settings, settings.model_name or config.default_name())


def wire(service: Service) -> Assembled:
    """What the runtime needs before `Service.start`: the webhook senders, the store's
    recovery (an `on_start` hook) and the metrics' subscription to runtime events (the
    first worker start and setup are counted only if it comes first)."""
    # webhooks: only requests that name one get a sender; queued deliveries get
    # WEBHOOK_DRAIN_SECONDS to finish on a graceful shutdown
    senders = webhooks.Webhooks(webhooks.WebhookConfig.from_env(), service.resolver,
                                bus=service.events, durable=service.durable)
    service.on_drain.append(lambda: senders.drain(WEBHOOK_DRAIN_SECONDS))
    if service.durable is not None:  # at start: take over what a dead server left
        from cogserve.runtime.store.recovery import Recovery

        service.on_start.append(Recovery(service, service.durable, senders).start)
    metrics = observability.metrics_feed(
        service, service.settings.observability or ObservabilityOptions())
    return Assembled(service, senders, metrics)


def build_app(runtime: Assembled, *, max_body: int, on_shutdown: Callable[[], None]) -> App:
    """The ASGI app for `runtime`'s service: routes, features and mounts, all passed in.
    The HTTP stack (uvicorn's protocol included) is imported here, not before."""
    from cogserve.http import security, sse
    from cogserve.http.app import App
    from cogserve.http.cog_routes import CogRoutes
    from cogserve.v2.routes import V2Routes

    service = runtime.service
    cog = CogRoutes(service, max_body, on_shutdown,
                    webhook_listener=runtime.webhooks.listener,
                    # `Accept: text/event-stream` on /predictions (streaming models; others 406)
                    sse_handler=sse.handler(service))
    # access control: the bearer token and the /shutdown switch
    access = security.AccessConfig.from_env()
    guard = security.guard(access)
    routes: dict[str, dict[str, Any]] = security.routes(access)
    # the Open Inference Protocol on the same service
    mounts: list[tuple[str, ASGIApp]] = [("/v2", V2Routes(service, max_body))]
    mcp_page = None
    if service.settings.mcp:  # the model as an MCP tool at /mcp (--no-mcp)
        from cogserve import mcp

        mounts.append((mcp.PATH, mcp.mount(service, max_body)))
        mcp_page = mcp.page_settings()
    openai_mount = None
    checked: Callable[[Any], None] | None = guard
    if service.settings.openai:  # the OpenAI API at /v1 (language and image models only)
        from cogserve import openai_api

        openai_mount = openai_api.mount(service, max_body)
        mounts.append((openai_api.PATH, openai_mount))
        if guard is not None:  # its 401 in OpenAI's error shape
            checked = openai_api.guarded(guard)
    if service.settings.playground:  # the browser playground at /docs (--no-playground)
        from cogserve.http import playground

        page = playground.Playground(
            service, max_body, mcp=mcp_page,
            openai=openai_mount.page_settings if openai_mount is not None else None)
        routes.update(playground.routes(page))
        if guard is not None:  # COGSERVE_AUTH_TOKEN: the page asks for it, then sends it
            guard.allow(*playground.PAGES,
                        *(playground.ASSET_PREFIX + name for name in page.assets))
    # the clouds' contracts, when asked for: SageMaker's (--sagemaker), Vertex AI's (its
    # AIP_* variables)
    from cogserve.process.envvars import vertex_routes

    vertex = vertex_routes()
    if service.settings.sagemaker or vertex is not None:
        from cogserve import cloud

        routes.update(cloud.routes(service, max_body, sagemaker=service.settings.sagemaker,
                                   vertex=vertex))
        if guard is not None:  # the platforms' health checks send no token, as /health-check
            guard.allow(*cloud.health_paths(service.settings.sagemaker, vertex))
    # metrics (/metrics), the access log and, when asked for, OpenTelemetry traces: an
    # observer around the app's request handling
    watch = observability.build(service, runtime.metrics)
    routes.update(watch.routes)
    return App(service, cog, routes=routes, mounts=mounts, guard=checked,
               observer=watch.observer)
