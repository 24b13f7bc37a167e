"""What both cloud contracts share: reading a JSON body, and answering every refusal as
`{"error": message}` with its status (the runtime's refusals by the table both of
Cog's front ends use, `http/refusals.py`), as SageMaker and Vertex AI pass a container's
error answers on to their callers."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import orjson

from cogserve.http import refusals
from cogserve.http.asgi import Receive, Scope, Send
from cogserve.http.request_document import has_json_type
from cogserve.http.responses import HTTPError, header, read_body, send_json
from cogserve.model.verdicts import InputError
from cogserve.runtime.errors import Refusal

if TYPE_CHECKING:
    from cogserve.cloud.runtime import CloudRuntime

JSON = "application/json"


def refuse(status: int, message: str) -> HTTPError:
    return HTTPError(status, {"error": message})


def health(runtime: CloudRuntime) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """A platform's health check: 200 once the model can take predictions, else 503."""

    async def answer(scope: Scope, receive: Receive, send: Send) -> None:
        healthy = await runtime.healthy()
        await send_json(send, 200 if healthy else 503,
                        {"status": "healthy" if healthy else "not ready"})

    return answer


def errors_answered(handler: Callable[[Scope, Receive, Send], Awaitable[None]]
                    ) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """`handler` with the runtime's refusals and refused inputs answered in this shape
    (the App answers an `HTTPError` and a `RequestError` as `{"error": ...}` already)."""

    @functools.wraps(handler)
    async def answered(scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await handler(scope, receive, send)
        except Refusal as exc:
            status, headers = refusals.status_of(exc)
            raise HTTPError(status, {"error": str(exc)}, headers) from None
        except InputError as exc:
            raise refuse(422, str(exc)) from None

    return answered


async def read_json(scope: Scope, receive: Receive, max_body: int) -> Any:
    """The request's JSON body: 415 for another Content-Type (none is read as JSON), 406
    when the client accepts no JSON answer, 413 past `max_body`, 400 for bad JSON."""
    if has_json_type(scope) is False:
        raise refuse(415, f"the body must be JSON (Content-Type: {JSON}), not "
                          f"{header(scope, b'content-type')}")
    if not accepts_json(header(scope, b"accept")):
        raise refuse(406, f"the answer is JSON ({JSON}); the request accepts only "
                          f"{header(scope, b'accept')}")
    raw = await read_body(receive, scope, max_body)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise refuse(400, f"the body is not JSON: {exc}") from None


def accepts_json(accept: str | None) -> bool:
    if not accept:
        return True
    for part in accept.split(","):
        mime = part.split(";", 1)[0].strip().lower()
        if mime in ("*/*", "application/*", JSON) or mime.endswith("+json"):
            return True
    return False
