"""The request observer under an ASGI server other than cogserve's (Ray Serve's): it wraps
`send` to learn the status, and the wrapper must call the server's `send`, not itself
(a closure over the rebound name recursed until RecursionError: every request a 500)."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from cogserve.http.routing import ROUTE_KEY
from cogserve.observability.requests import RequestObserver


async def _respond(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 201, "headers": []})
    await send({"type": "http.response.body", "body": b"made"})


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


def _observe(respond: Any, caplog: pytest.LogCaptureFixture
             ) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """One POST /predictions through the observer under a foreign server (a plain `send`):
    the scope after it, the messages sent, and the access line."""
    sent: list[dict[str, Any]] = []

    async def server_send(message: dict[str, Any]) -> None:
        sent.append(message)

    observer = RequestObserver().around(respond)
    scope = {"type": "http", "method": "POST", "path": "/predictions", "headers": [],
             ROUTE_KEY: SimpleNamespace(template="/predictions")}
    with caplog.at_level(logging.INFO, logger="cogserve.access"):
        asyncio.run(observer(scope, _receive, server_send))
    [line] = [r.getMessage() for r in caplog.records if r.name == "cogserve.access"]
    return scope, sent, line


def test_a_foreign_servers_send_is_called_once_per_message_and_the_status_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    _, sent, line = _observe(_respond, caplog)
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[1]["body"] == b"made"
    assert line.startswith("POST /predictions 201 ")


def test_the_prediction_leaves_the_scope_with_its_request(
        caplog: pytest.LogCaptureFixture) -> None:
    """The server's per-connection objects hold the last scope in a reference cycle until
    a full garbage collection: a prediction left there kept its outputs alive (134 MB per
    request for a 50 MiB file's data URL). It is still in the access line."""
    from cogserve.http.responses import PREDICTION_KEY

    async def respond(scope: Any, receive: Any, send: Any) -> None:
        scope[PREDICTION_KEY] = SimpleNamespace(id="kept-till-logged")
        await _respond(scope, receive, send)

    scope, _, line = _observe(respond, caplog)
    assert PREDICTION_KEY not in scope
    assert "prediction kept-till-logged" in line
