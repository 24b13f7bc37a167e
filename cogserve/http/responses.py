"""Small ASGI response and request helpers shared by Cog's routes and the V2 routes."""

from __future__ import annotations

from typing import Any

import orjson

from cogserve import jsoncodec

JSON_HEADERS = [(b"content-type", b"application/json")]
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


async def send_json(send: Any, status: int, body: Any,
                    headers: list[tuple[bytes, bytes]] | None = None) -> None:
    payload = body if isinstance(body, bytes) else orjson.dumps(body)
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(payload)).encode()),
            *(headers or ()),
        ],
    })
    await send({"type": "http.response.body", "body": payload})


def header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


async def read_body(receive: Any, scope: dict[str, Any], limit: int) -> bytes:
    """The whole request body, or HTTPError 413 as soon as it exceeds `limit` bytes."""
    length = header(scope, b"content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise HTTPError(413, {"error": f"Request body is {int(length)} bytes; the limit is "
                                        f"{limit} bytes"})
    message = await receive()
    body = message.get("body", b"")
    if not message.get("more_body"):
        return body
    chunks = [body]
    size = len(body)
    while message.get("more_body"):
        message = await receive()
        if message["type"] == "http.disconnect":
            raise HTTPError(400, {"error": "client disconnected while sending the body"})
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise HTTPError(413, {"error": f"Request body exceeds the limit of {limit} bytes"})
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json(body: bytes) -> Any:
    if not body.strip():
        return None
    try:
        return jsoncodec.loads(body)
    except jsoncodec.DecodeError as exc:
        raise HTTPError(400, {"error": f"Request body is not valid JSON: {exc}"}) from None
