"""Requests that name a prediction under Ray Serve's HAProxy ingress: the replica that
receives one forwards it to the replica that holds the prediction.

With `--ingress haproxy` HAProxy sends each HTTP request straight to a replica's own HTTP
server and Ray's request router is not consulted (Ray refuses a custom one there), so
`PredictionRouter` cannot keep an id on its replica. Instead the replica HAProxy picked
decides, with the same rules (`ray_routing.Homes`): a request for an id it holds, or
one that was forwarded to it already, it serves; otherwise it passes the request on to
the id's home over HTTP (the home's direct-ingress address, which the Serve controller
gives out as it gives HAProxy its targets) and streams the answer back. When the client
goes away, Ray cancels the forwarding handler, which closes the connection to the home,
whose handler Ray cancels in turn: the prediction is cancelled as without a hop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx2

from cogserve.deploy.ray_routing import Homes
from cogserve.http.asgi import Receive, Scope, Send
from cogserve.http.responses import send_json
from cogserve.wire.states import Status

FORWARDED = b"x-cogserve-forwarded"  # set on a forwarded request: its receiver serves it
REFRESH_SECONDS = 1.0  # how old the list of replicas may be before a lookup refreshes it
CONNECT_SECONDS = 5.0
# headers about one connection, not the message (RFC 9110 section 7.6.1)
HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"proxy-connection", b"te", b"trailer",
                        b"transfer-encoding", b"upgrade"})
# the forwarded request gets its own Host and framing (its body is sent chunked)
NOT_FORWARDED = HOP_BY_HOP | {b"host", b"content-length"}


class Peers:
    """The live replicas of this deployment and their direct-ingress HTTP addresses, as the
    Serve controller lists them for HAProxy (a private Ray call: `get_target_groups`)."""

    def __init__(self, app_name: str, me: str) -> None:
        self.app_name = app_name
        self.me = me
        self._addresses: dict[str, str] = {}  # replica unique id -> "ip:port"
        self._fetched = -REFRESH_SECONDS
        self._lock = asyncio.Lock()

    async def addresses(self, *, fresh: bool = False) -> dict[str, str]:
        async with self._lock:
            if fresh or time.monotonic() - self._fetched >= REFRESH_SECONDS:
                self._addresses = await self._fetch()
                self._fetched = time.monotonic()
            return self._addresses

    async def _fetch(self) -> dict[str, str]:
        import ray
        from ray._common.network_utils import get_localhost_ip
        from ray.serve._private.common import RequestProtocol
        from ray.serve._private.constants import SERVE_CONTROLLER_NAME, SERVE_NAMESPACE

        controller = ray.get_actor(SERVE_CONTROLLER_NAME, namespace=SERVE_NAMESPACE)
        groups = await controller.get_target_groups.remote(app_name=self.app_name,
                                                          from_proxy_manager=True)
        # a replica on this node is reached on the loopback address, as HAProxy does:
        # its server listens on --host, which may be 127.0.0.1, not the node's address
        here = ray.util.get_node_ip_address()
        return {target.name.rsplit("#", 1)[-1]:
                f"{get_localhost_ip() if target.ip == here else target.ip}:{target.port}"
                for group in groups if group.protocol == RequestProtocol.HTTP
                for target in group.targets}


class Forwarder:
    """Decides where a request for a prediction id is served and forwards it there."""

    def __init__(self, peers: Peers) -> None:
        self.peers = peers
        self.homes = Homes()
        self._client: httpx2.AsyncClient | None = None

    async def home(self, ident: str, *, creating: bool = False,
                   fresh: bool = False) -> str | None:
        """The address of the id's home, or None when it is this replica.

        Only the replicas the controller lists count, this one included: a replica that
        has just started, and is not listed yet, sends a client-chosen id where the
        listed ones do rather than keep it (two homes for one id). With none listed
        (the first replica starting), this one serves. `creating` (a PUT of an id this
        replica does not hold): before keeping it, the decision is taken again on the
        controller's current list, since another replica whose list is newer than this
        one's (up to REFRESH_SECONDS old) may be keeping it too.
        """
        addresses = await self.peers.addresses(fresh=fresh)
        home = self.homes.home(ident, sorted(addresses))
        if home is None or home == self.peers.me:
            if creating and not fresh:
                return await self.home(ident, creating=True, fresh=True)
            return None
        self.homes.pin(ident, home)
        return addresses[home]

    async def forward(self, address: str, ident: str, scope: Scope, receive: Receive,
                      send: Send) -> bool:
        """Pass the request on to `address` and stream its answer back. False (nothing sent
        either way) if that replica is gone and the id's home is now this one.

        A home that cannot be reached (a replica being replaced after its worker died)
        is answered 503 here, as a replica whose worker is gone answers: the error would
        otherwise leave the app as a 500.
        """
        body = _Body(receive)
        for attempt in range(2):
            try:
                response = await self._send(address, scope, body)
            except httpx2.ConnectError as exc:
                if attempt or body.started:
                    await _unreachable(send, ident, exc)
                    return True
                found = await self.home(ident, fresh=True)  # the home may have been replaced
                if found is None:
                    return False
                address = found
                continue
            except httpx2.TransportError as exc:  # it went away before it answered
                await _unreachable(send, ident, exc)
                return True
            try:
                await send({"type": "http.response.start", "status": response.status_code,
                            "headers": [(k, v) for k, v in response.headers.raw
                                        if k.lower() not in HOP_BY_HOP]})
                async for chunk in response.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            finally:
                await response.aclose()
            return True
        raise AssertionError("unreachable")  # pragma: no cover

    async def _send(self, address: str, scope: Scope, body: _Body) -> httpx2.Response:
        if self._client is None:
            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(None, connect=CONNECT_SECONDS), trust_env=False)
        host, port = address.rsplit(":", 1)
        raw_path = scope.get("raw_path") or scope["path"].encode()
        if scope.get("query_string"):
            raw_path += b"?" + scope["query_string"]
        url = httpx2.URL(scheme="http", host=host, port=int(port), raw_path=raw_path)
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in NOT_FORWARDED]
        headers.append((FORWARDED, b"1"))
        request = self._client.build_request(scope["method"], url, headers=headers,
                                             content=body.chunks())
        return await self._client.send(request, stream=True)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()


async def _unreachable(send: Send, ident: str, exc: httpx2.TransportError) -> None:
    await send_json(send, 503, {"error": f"the replica that holds {ident!r} cannot be reached "
                                         f"({type(exc).__name__}: {exc}); try again",
                                "status": Status.FAILED}, [(b"retry-after", b"1")])


class _Body:
    """The request's body as it arrives, read once (so a retry is only possible before)."""

    def __init__(self, receive: Receive) -> None:
        self.receive = receive
        self.started = False

    async def chunks(self) -> AsyncIterator[bytes]:
        self.started = True
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise ConnectionAbortedError("the client went away while sending the body")
            yield message.get("body", b"")
            if not message.get("more_body", False):
                return
