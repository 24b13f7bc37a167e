"""Small ASGI response and request helpers shared by Cog's routes and the V2 routes."""

from __future__ import annotations

from typing import Any

import orjson

from cogserve.http.asgi import Receive, Scope, Send
from cogserve.http.cycle import Cycle

# the scope key under which a route leaves the prediction a request made or named, for
# the request observer (access log, trace) to read after the response
PREDICTION_KEY = "cogserve.prediction"


class HTTPError(Exception):
    """Raised by a handler to answer with `status` and a JSON body."""

    def __init__(self, status: int, body: Any, headers: list[tuple[bytes, bytes]] | None = None):
        super().__init__(body)
        self.status = status
        self.body = body
        self.headers = headers or []


class PlainError(Exception):
    """Raised by a handler to answer as the reference does outside its JSON routes: a
    `text/plain` message (a body it could not read), or no body at all (`text` None: an
    unknown route, a method not allowed)."""

    def __init__(self, status: int, text: str | None = None,
                 headers: list[tuple[bytes, bytes]] | None = None) -> None:
        super().__init__(text)
        self.status = status
        self.text = text
        self.headers = headers or []


class RequestError(Exception):
    """The request cannot be read (too large, cut off, not JSON): a status and a message.

    Raised by the helpers below, which both front ends use; each front end shapes the
    body its own way.
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


async def send_json(send: Send, status: int, body: Any,
                    headers: list[tuple[bytes, bytes]] | None = None) -> None:
    payload = body if isinstance(body, bytes) else orjson.dumps(body)
    head = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        *(headers or ()),
    ]
    # cogserve's own server takes the whole answer in one call (`Cycle.respond`)
    cycle = getattr(send, "__self__", None)
    if type(cycle) is Cycle and cycle.respond(status, head, payload):
        return
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": payload})


async def send_plain(send: Send, error: PlainError) -> None:
    payload = b"" if error.text is None else error.text.encode()
    kind = [] if error.text is None else [(b"content-type", b"text/plain; charset=utf-8")]
    await send({
        "type": "http.response.start",
        "status": error.status,
        "headers": [*kind, (b"content-length", str(len(payload)).encode()), *error.headers],
    })
    await send({"type": "http.response.body", "body": payload})


_HEADERS_KEY = "cogserve.headers"  # the scope's headers by name, made on the first look-up


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of the request header `name` (lowercase), or None.

    A create request asks for eight headers; the first look-up maps them by name (the
    first value of each, as a scan finds it: `headers_of`), the others are dict look-ups."""
    value = headers_of(scope).get(name)
    if value is None:
        return None
    decoded: str = value.decode("latin-1")
    return decoded


def headers_of(scope: Scope) -> dict[bytes, bytes]:
    """The request's headers by (lowercase) name, the first value of each; made once per
    request (kept in the scope), read-only."""
    headers = scope["headers"]
    cached = scope.get(_HEADERS_KEY)
    if cached is None or cached[0] is not headers:
        pairs = headers if isinstance(headers, list | tuple) else list(headers)
        cached = scope[_HEADERS_KEY] = (headers, dict(reversed(pairs)))
    by_name: dict[bytes, bytes] = cached[1]
    return by_name


# httptools stops parsing at the head of a request that asks to switch protocols (curl's
# `--http2` sends `Upgrade: h2c`), so its body never arrives; no route upgrades, and the
# request is otherwise served as HTTP/1.1
UPGRADE_BODY_LOST = ("A request with an Upgrade header cannot carry a body here: the "
                     "server does not switch protocols. Send it without the Upgrade header.")


async def read_body(receive: Receive, scope: Scope, limit: int) -> bytes:
    """The whole request body, or RequestError 413 as soon as it exceeds `limit` bytes."""
    length = header(scope, b"content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise RequestError(413, f"Request body is {int(length)} bytes; the limit is "
                                f"{limit} bytes")
    message = await receive()
    body: bytes = message.get("body", b"")
    size = len(body)
    if size > limit:  # no Content-Length (chunked), and past the limit in the first read
        raise RequestError(413, f"Request body exceeds the limit of {limit} bytes")
    if not message.get("more_body"):
        if not body and length not in (None, "0") and header(scope, b"upgrade") is not None:
            raise RequestError(400, UPGRADE_BODY_LOST)
        return body
    chunks = [body]
    while message.get("more_body"):
        message = await receive()
        if message["type"] == "http.disconnect":
            raise RequestError(400, "client disconnected while sending the body")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise RequestError(413, f"Request body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
