"""Attach optional front-end features to the app: webhooks, SSE, V2, the playground.

Each feature lives in its own module and registers itself here, so `app.py` stays a
router and the hot path pays nothing for features a request does not use.
"""

from __future__ import annotations

from typing import Any

WEBHOOK_DRAIN_SECONDS = 10.0


def install(app: Any) -> None:
    """Called once when the app is built."""
    from cogserve.http import security

    security.install(app)  # first: the token and the shutdown switch
    _install_webhooks(app)
    _install_sse(app)
    _install_v2(app)
    _install_observability(app)
    if app.service.settings.playground:
        _install_playground(app)


def _install_webhooks(app: Any) -> None:
    """Only requests that name a webhook get a sender; the rest pay nothing."""
    from cogserve.runtime import webhooks

    app.cog.webhook_listener = webhooks.listener_factory(bus=app.service.events)
    app.service.on_drain.append(lambda: webhooks.drain(WEBHOOK_DRAIN_SECONDS))


def _install_sse(app: Any) -> None:
    """`Accept: text/event-stream` on /predictions (streaming models; others get 406)."""
    from cogserve.http import sse

    app.cog.sse_handler = sse.handler(app.service)


def _install_observability(app: Any) -> None:
    """Metrics (/metrics), the access log and, when asked for, OpenTelemetry traces."""
    from cogserve import observability

    options = app.service.settings.observability or observability.ObservabilityOptions()
    observability.install(app, options)


def _install_v2(app: Any) -> None:
    """The Open Inference Protocol on the same service, under /v2."""
    from cogserve.v2.routes import V2Routes

    app.mounts.append(("/v2", V2Routes(app.service, app.cog.max_body)))


def _install_playground(app: Any) -> None:
    """The browser playground at /docs and /playground (off with --no-playground)."""
    from cogserve.http import playground

    playground.install(app)
