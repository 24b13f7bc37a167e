"""Errors in OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, with the
statuses OpenAI answers them with; the runtime's refusals mapped once, here."""

from __future__ import annotations

from typing import Any

from cogserve.runtime.errors import AtCapacity, NotReady, QueueFull, Refusal

INVALID = "invalid_request_error"


class APIError(Exception):
    """Raised by a /v1 handler: answered as OpenAI answers it."""

    def __init__(self, status: int, message: str, *, type_: str = INVALID,
                 param: str | None = None, code: str | None = None,
                 headers: list[tuple[bytes, bytes]] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.param = param
        self.code = code
        self.headers = headers or []

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param,
                          "code": self.code}}


def bad(param: str | None, message: str, code: str | None = None) -> APIError:
    """400 for a field of the request (`param` names it, as OpenAI's answers do)."""
    return APIError(400, message, param=param, code=code)


def from_refusal(exc: Refusal) -> APIError:
    """The runtime's refusal as OpenAI says it: no slot and no room in the queue is a
    429 (with Retry-After when the queue estimates one), not ready a 503."""
    if isinstance(exc, QueueFull):
        return APIError(429, str(exc), type_="rate_limit_error", code="queue_full",
                        headers=[(b"retry-after", str(exc.retry_after).encode())])
    if isinstance(exc, AtCapacity):
        return APIError(429, str(exc), type_="rate_limit_error", code="at_capacity",
                        headers=[(b"retry-after", b"1")])
    if isinstance(exc, NotReady):
        return APIError(503, str(exc), type_="server_error", code="model_not_ready")
    return APIError(400, str(exc))
