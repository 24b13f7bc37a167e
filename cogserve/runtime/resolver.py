"""Name resolution for the parent's outgoing HTTP (webhooks, uploads), bounded and shared.

The event loop resolves names in a small shared thread pool (libuv's has 4 threads),
and `getaddrinfo` cannot be interrupted. A hundred webhooks to names whose DNS server
never answers filled that pool: a webhook to `localhost` then never arrived, and at
exit the loop waited for every stuck lookup (SIGTERM took 23 s with 60 of them, 58 s
with 150). Here:

- each lookup runs in a daemon thread of its own, at most `max_threads` at once (the
  rest queue in order), so a stuck lookup holds one thread and never the exit;
- a caller waits at most `timeout` seconds, then gets an error (the webhook's own
  retry logic decides what next);
- concurrent lookups of one name share one thread, and answers (failures too) are
  kept for `ttl` seconds, so retries to a dead name cost no thread;
- IP literals and answers are then checked against the URL policy (`netpolicy`),
  and the connection is made to the checked address (no second lookup to rebind).

One Resolver per server, owned by its Service (built with the Settings' URL policy) and
handed to what connects out: its file outputs' uploader and the webhooks. httpx gets it
through `runtime/transport.py`, an httpcore network backend whose connect_tcp resolves
with it; TLS still verifies the certificate against the URL's host name. Standard
library only, so a server that never connects out imports no HTTP client.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import threading
import time
from collections import deque

from cogserve.process.netpolicy import URLPolicy, check


class ResolveError(OSError):
    """A host name could not be resolved (in time)."""


class Resolver:
    def __init__(self, policy: URLPolicy, *, max_threads: int = 128,
                 timeout: float = 5.0, ttl: float = 30.0) -> None:
        self.policy = policy
        self.timeout = timeout
        self.ttl = ttl
        self.max_threads = max_threads
        self._running = 0
        self._waiting: deque[tuple[str, int]] = deque()
        self._cache: dict[tuple[str, int], tuple[float, list[str] | OSError]] = {}
        self._pending: dict[tuple[str, int], asyncio.Future[list[str]]] = {}

    async def resolve(self, host: str, port: int) -> list[str]:
        """The addresses to connect to for `host`, each allowed by the policy."""
        try:
            ipaddress.ip_address(host.split("%", 1)[0])
            addresses = [host]
        except ValueError:
            addresses = await self._lookup(host, port)
        allowed = []
        error: OSError | None = None
        for address in addresses:
            try:
                check(self.policy, host, address)
                allowed.append(address)
            except OSError as exc:
                error = exc
        if not allowed:
            raise error or ResolveError(f"{host}: no addresses")
        return allowed

    async def _lookup(self, host: str, port: int) -> list[str]:
        key = (host.lower(), port)
        cached = self._cache.get(key)
        if cached is not None and cached[0] > time.monotonic():
            if isinstance(cached[1], OSError):
                raise ResolveError(str(cached[1]))
            return cached[1]
        future = self._pending.get(key)
        if future is None:
            future = self._start(key)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.timeout)
        except TimeoutError:
            raise ResolveError(f"resolving {host} took longer than {self.timeout:g} s") from None

    def _start(self, key: tuple[str, int]) -> asyncio.Future[list[str]]:
        future: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        self._waiting.append(key)
        self._launch()
        return future

    def _launch(self) -> None:
        """Start queued lookups while fewer than max_threads run (called on the loop)."""
        loop = asyncio.get_running_loop()
        while self._waiting and self._running < self.max_threads:
            key = self._waiting.popleft()
            self._running += 1
            threading.Thread(target=self._work, args=(loop, key), name="cogserve-resolve",
                             daemon=True).start()

    def _work(self, loop: asyncio.AbstractEventLoop, key: tuple[str, int]) -> None:
        try:
            infos = socket.getaddrinfo(key[0], key[1], type=socket.SOCK_STREAM)
            result: list[str] | OSError = list(dict.fromkeys(str(i[4][0]) for i in infos))
        except OSError as exc:
            result = exc
        try:
            loop.call_soon_threadsafe(self._settle, key, result)
        except RuntimeError:  # the loop closed while this lookup hung: nobody listens
            pass

    def _settle(self, key: tuple[str, int], result: list[str] | OSError) -> None:
        self._running -= 1
        future = self._pending.pop(key, None)
        self._cache[key] = (time.monotonic() + self.ttl, result)
        if len(self._cache) > 4096:  # a client naming ever new hosts: forget the oldest
            for stale in list(self._cache)[:1024]:
                del self._cache[stale]
        if future is not None and not future.done():
            if isinstance(result, OSError):
                future.set_exception(ResolveError(f"cannot resolve {key[0]}: {result}"))
                future.exception()  # callers that timed out are gone: no "never retrieved"
            else:
                future.set_result(result)
        self._launch()
