"""The model as an MCP tool: /mcp on the model's own server (`--no-mcp` leaves it out).

MCP's Streamable HTTP transport is spoken by the official `mcp` SDK, an optional extra
(`pip install 'cogserve[mcp]'`: it brings pydantic, starlette, cryptography and more).
This module imports none of it: `mount` gives the app a small ASGI callable that loads
`cogserve.mcp.server` (and the SDK) in a thread on the first request to /mcp, so a
server that nobody asks for MCP starts and serves as it did without it. Without the
extra, /mcp answers 501 saying how to get it.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import logging
from typing import TYPE_CHECKING, Any

from cogserve.http.asgi import ASGIApp, Receive, Scope, Send
from cogserve.http.responses import HTTPError
from cogserve.mcp.runtime import MCPRuntime

if TYPE_CHECKING:
    from cogserve.mcp.server import Endpoint
    from cogserve.runtime.service import Service

log = logging.getLogger("cogserve")

PATH = "/mcp"
INSTALL_HINT = "pip install 'cogserve[mcp]'"


def sdk_installed() -> bool:
    """Whether the `mcp` SDK can be imported (found without importing it)."""
    return importlib.util.find_spec("mcp") is not None


def page_settings() -> dict[str, Any]:
    """/mcp as the playground shows it: where, and how to install the SDK if it is missing."""
    installed = sdk_installed()
    return {"path": PATH, "installed": installed,
            "install": None if installed else INSTALL_HINT}


def mount(service: Service, max_body: int) -> ASGIApp:
    """What answers under /mcp: the SDK's endpoint, loaded on first use, or the 501."""
    if not sdk_installed():
        return _missing_extra
    return MCPMount(MCPRuntime(service), max_body)


async def _missing_extra(scope: Scope, receive: Receive, send: Send) -> None:
    raise HTTPError(501, {"error": "MCP at /mcp needs the MCP SDK, an optional extra of "
                                   f"cogserve: {INSTALL_HINT} (or start the server with "
                                   "--no-mcp)"})


class MCPMount:
    """/mcp: starts the endpoint on the first request, then hands every request to it."""

    def __init__(self, runtime: MCPRuntime, max_body: int) -> None:
        self.runtime = runtime
        self.max_body = max_body
        self._endpoint: Endpoint | None = None
        self._starting: asyncio.Future[Endpoint] | None = None
        self._closed = False
        runtime.on_shutdown(self.close)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._closed:
            raise HTTPError(503, {"error": "The server is shutting down"})
        endpoint = self._endpoint
        if endpoint is None:
            if self._starting is None:
                self._starting = asyncio.ensure_future(self._start())
            try:
                endpoint = await asyncio.shield(self._starting)
            except Exception as exc:
                raise HTTPError(500, {"error": f"the MCP endpoint could not start: {exc}"}) \
                    from None
        await endpoint(scope, receive, send)

    async def _start(self) -> Endpoint:
        try:
            # in a thread: importing the SDK takes a while, and other requests go on
            server = await asyncio.to_thread(importlib.import_module, "cogserve.mcp.server")
            endpoint: Endpoint = server.Endpoint(self.runtime, self.max_body)
            await endpoint.start()
        except Exception:
            log.exception("the MCP endpoint at %s could not start", PATH)
            self._starting = None  # the next request tries again
            raise
        self._endpoint = endpoint
        return endpoint

    async def close(self) -> None:
        """At shutdown: end the sessions (after in-flight predictions have drained)."""
        self._closed = True
        if self._endpoint is not None:
            await self._endpoint.stop()
