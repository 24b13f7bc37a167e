"""httpx2 transports for the parent's outgoing HTTP (webhooks, uploads) that resolve names
with the server's `Resolver`: bounded lookups, and connections made to the addresses the
URL policy allowed (no second lookup to rebind). Imported on the first webhook or
upload: httpx2 and httpcore2 cost every server's start ~25 ms.
"""

from __future__ import annotations

from typing import Any

import httpcore2
import httpx2

from cogserve.runtime.resolver import Resolver


class ResolvingBackend(httpcore2.AsyncNetworkBackend):
    """httpcore2's default backend, connecting to addresses the Resolver chose."""

    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver
        self.inner = httpcore2.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Any = None) -> httpcore2.AsyncNetworkStream:
        try:
            addresses = await self.resolver.resolve(host, port)
        except OSError as exc:
            raise httpcore2.ConnectError(str(exc)) from exc
        error: Exception | None = None
        for address in addresses:
            try:
                return await self.inner.connect_tcp(address, port, timeout=timeout,
                                                    local_address=local_address,
                                                    socket_options=socket_options)
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                error = exc
        assert error is not None
        raise error

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> httpcore2.AsyncNetworkStream:
        return await self.inner.connect_unix_socket(path, timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


def transport(resolver: Resolver, **kwargs: Any) -> httpx2.AsyncHTTPTransport:
    """An httpx2 transport (`kwargs` are its own) that resolves with `resolver`."""
    result = httpx2.AsyncHTTPTransport(**kwargs)
    pool = result._pool  # httpx2 has no parameter for the network backend
    if not hasattr(pool, "_network_backend"):
        raise RuntimeError("httpcore2 changed: cannot set the network backend")
    pool._network_backend = ResolvingBackend(resolver)
    return result
