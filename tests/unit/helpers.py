"""Helpers of the in-process unit tests (no server process, stubs where the runtime would be).

Each test that needs an event loop runs its body with `run`, so the suite needs no
asyncio plugin; everything here finishes in milliseconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(body: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(body())


class Response:
    """What an ASGI app sent for one request."""

    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[bytes, bytes] = {}
        self.body = b""

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = dict(message.get("headers", []))
        else:
            self.body += message.get("body", b"")


async def call(app: Any, method: str, path: str, body: bytes = b"",
               headers: list[tuple[bytes, bytes]] | None = None) -> Response:
    """One HTTP request to an ASGI app, in process."""
    scope = {"type": "http", "method": method, "path": path, "headers": headers or []}
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client stays connected
        return {"type": "http.disconnect"}

    response = Response()
    await app(scope, receive, response.send)
    return response
