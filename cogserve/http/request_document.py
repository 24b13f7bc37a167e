"""The body of a Cog create request (`POST /predictions`, `PUT /predictions/{id}`, and
the same for trainings), read by the reference's rules.

coglet reads it with axum's optional JSON extractor into a serde struct, so:
- no `Content-Type` header: the body is not read at all, the request is `{}`;
- a `Content-Type` that is not JSON (`application/json`, or a `+json` type): 415;
- a body that is not JSON (an empty one included): 400;
- JSON of the wrong shape (not an object; `id` or `webhook` not a string;
  `webhook_events_filter` not a list of event names; `context` not a map of strings): 422.
Each answer is `text/plain`, prefixed as axum words it; the tail says what was wrong in
our words (coglet's names serde's position in the body). Keys the struct does not know
are ignored, and `input` may be anything: its checks are the schema's (422 JSON).
"""

from __future__ import annotations

from typing import Any

from cogserve.http.asgi import Scope
from cogserve.http.responses import PlainError, headers_of
from cogserve.model.validation import show
from cogserve.wire import jsoncodec
from cogserve.wire.states import WebhookEvent

UNSUPPORTED_TYPE = "Expected request with `Content-Type: application/json`"
NOT_JSON = "Failed to parse the request body as JSON: "
WRONG_SHAPE = "Failed to deserialize the JSON body into the target type: "
_EVENT_NAMES = frozenset(WebhookEvent)  # `in WebhookEvent` raises for a str on 3.11
_SHAPED = frozenset({"id", "webhook", "webhook_events_filter", "context"})  # checked below


def has_json_type(scope: Scope) -> bool | None:
    """None without a Content-Type; else whether it names JSON (as axum decides)."""
    return json_type(headers_of(scope).get(b"content-type"))


def json_type(content_type: bytes | None) -> bool | None:
    """`has_json_type` of a Content-Type header's value, for a caller that has it."""
    if content_type is None:
        return None
    if content_type == b"application/json":  # most requests
        return True
    mime = content_type.split(b";", 1)[0].strip().lower()
    kind, _, subtype = mime.partition(b"/")
    return kind == b"application" and (subtype == b"json" or subtype.endswith(b"+json"))


def parse(raw: bytes) -> dict[str, Any]:
    """The request document of a JSON body, or PlainError 400/422."""
    try:
        document = jsoncodec.loads(raw)
    except jsoncodec.DecodeError as exc:
        raise PlainError(400, NOT_JSON + str(exc)) from None
    problem = _shape_problem(document)
    if problem is not None:
        raise PlainError(422, WRONG_SHAPE + problem)
    assert isinstance(document, dict)
    return document


def _shape_problem(document: Any) -> str | None:
    if not isinstance(document, dict):
        return f"invalid type: {show(document)}, expected struct PredictionRequest"
    if _SHAPED.isdisjoint(document):  # most requests: `input` alone
        return None
    for key in ("id", "webhook"):
        value = document.get(key)
        if value is not None and not isinstance(value, str):
            return f"{key}: invalid type: {show(value)}, expected a string"
    events = document.get("webhook_events_filter", [])
    if not isinstance(events, list):
        return f"webhook_events_filter: invalid type: {show(events)}, expected a sequence"
    for index, event in enumerate(events):
        if not isinstance(event, str) or event not in _EVENT_NAMES:
            return (f"webhook_events_filter[{index}]: unknown variant {show(event)}, expected "
                    f"one of {', '.join(f'`{name}`' for name in WebhookEvent)}")
    context = document.get("context", {})
    if not isinstance(context, dict) or not all(isinstance(v, str) for v in context.values()):
        return f"context: invalid type: {show(context)}, expected a map of strings"
    return None
