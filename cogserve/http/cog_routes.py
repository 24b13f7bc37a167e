"""Cog's HTTP API: /predictions, /trainings, /health-check, /openapi.json, /, /shutdown,
and GET /predictions/{id} (an addition: the state of a running or recent prediction).

Each handler parses and checks the request, then asks the `Service` to act. The
order of refusals follows the reference: 503 while not ready, 422 for bad input
(before any slot is taken), 409 when every slot is busy. What the runtime refuses
arrives as a `Refusal`; `refusal_response` is the one place it becomes Cog's answer
(the app calls it for every route of this front end).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import orjson

import cogserve
from cogserve.http import form_document, refusals, request_document
from cogserve.http.asgi import Receive, Scope, Send
from cogserve.http.deadline import request_timeout
from cogserve.http.disconnect import wait_or_cancel
from cogserve.http.responses import (
    PREDICTION_KEY,
    HTTPError,
    PlainError,
    headers_of,
    read_body,
    send_json,
)
from cogserve.model.validation import ErrorKind, FieldError
from cogserve.runtime.errors import (
    AtCapacity,
    EvictedPrediction,
    InputNotSendable,
    NothingToCancel,
    Refusal,
    RunningElsewhere,
    UnknownPrediction,
)
from cogserve.runtime.found import Evicted, Finished, Queued, Running, Stored
from cogserve.runtime.health import HealthSnapshot
from cogserve.runtime.prediction import Listener, Prediction
from cogserve.runtime.request import PredictionRequest
from cogserve.runtime.service import Service
from cogserve.wire.protocol import Mode
from cogserve.wire.states import Status, WebhookEvent

EARLY_CHECK_BYTES = 1024 * 1024  # bodies larger than this are checked for a slot first
# hooks that the webhook and SSE features fill in (see `cogserve.assembly`)
WebhookListenerFactory = Callable[[str, frozenset[WebhookEvent] | None], Listener]
SSEHandler = Callable[[Scope, Receive, Send, Prediction, bool], Awaitable[None]]
_ID = re.compile(r"^[^/]{1,256}$")
_ID_RULE = "id must be a string of 1 to 256 characters without '/'"
LIST_LIMIT, LIST_MAX = 100, 1000  # GET /predictions: a page's default and largest size
_STATUSES = tuple(Status)
_TRACE_CONTEXT = (("traceparent", b"traceparent"), ("tracestate", b"tracestate"))


def refusal_response(exc: Refusal) -> HTTPError:
    """The runtime's refusal as Cog's routes answer it: the status from the shared table
    (`http/refusals.py`), the body in Cog's shape."""
    if type(exc) is AtCapacity:  # most requests to a busy server: the same answer each time
        return _AT_CAPACITY
    return _refusal_response(exc)


def _refusal_response(exc: Refusal) -> HTTPError:
    status, headers = refusals.status_of(exc)
    body: dict[str, Any]
    if isinstance(exc, InputNotSendable):  # as a validation error of the input
        body = {"detail": [{"loc": ["body", "input"], "type": "value_error", "msg": str(exc)}]}
    elif isinstance(exc, NothingToCancel):  # the reference's answer for an id it does not know
        body = {}
    elif isinstance(exc, UnknownPrediction):
        body = {"error": str(exc)}
    elif isinstance(exc, RunningElsewhere):  # its state as stored
        body = {"error": str(exc), "status": exc.status}
    else:
        body = {"error": str(exc), "status": Status.FAILED}
    return HTTPError(status, body, headers)


class CogRoutes:
    def __init__(self, service: Service, max_body: int, on_shutdown: Callable[[], None],
                 *, webhook_listener: WebhookListenerFactory | None = None,
                 sse_handler: SSEHandler | None = None) -> None:
        self.service = service
        self.max_body = max_body
        self.on_shutdown = on_shutdown
        self.webhook_listener = webhook_listener
        self.sse_handler = sse_handler

    # ------------------------------------------------------------ info endpoints

    async def root(self, scope: Scope, receive: Receive, send: Send) -> None:
        doc = {
            # as coglet: the `cog` SDK the model imports, else the server's own version
            "cog_version": self.service.versions.get("python_sdk", cogserve.__version__),
            "docs_url": "/docs",
            "openapi_url": "/openapi.json",
            "shutdown_url": "/shutdown",
            "healthcheck_url": "/health-check",
            "predictions_url": "/predictions",
            "predictions_idempotent_url": "/predictions/{prediction_id}",
            "predictions_cancel_url": "/predictions/{prediction_id}/cancel",
        }
        if not self.service.config.predict_ref:  # train-only: /predictions answers 404
            for key in ("predictions_url", "predictions_idempotent_url", "predictions_cancel_url"):
                del doc[key]
        if self.service.config.train_ref:
            doc["trainings_url"] = "/trainings"
            doc["trainings_idempotent_url"] = "/trainings/{training_id}"
            doc["trainings_cancel_url"] = "/trainings/{training_id}/cancel"
        await send_json(send, 200, doc)

    async def health_check(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send_json(send, 200, health_document(await self.service.health()))

    async def openapi(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.service.schema is None:
            reason = self.service.fatal_reason or "the model is still loading"
            raise HTTPError(503, {"error": f"OpenAPI schema not available: {reason}"})
        await send_json(send, 200, self.service.schema)

    async def shutdown(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send_json(send, 200, {})
        self.on_shutdown()

    # ------------------------------------------------------------ predictions

    async def create(self, scope: Scope, receive: Receive, send: Send,
                     path_id: str | None = None, mode: Mode = Mode.PREDICT) -> None:
        service = self.service
        headers = headers_of(scope)
        wants_sse = b"text/event-stream" in headers.get(b"accept", b"")
        if wants_sse:
            if mode is Mode.TRAIN:
                raise HTTPError(406, {"error": "Training endpoints do not support streaming "
                                               "responses."})
            if not service.streaming and service.schema is not None:
                raise HTTPError(406, {"error": "This model does not support streaming responses."
                                               " Add @cog.streaming to predict() to enable SSE."})
        if path_id is None or service.running(path_id) is None:
            _refuse_large_body_early(service, headers)
        body: dict[str, Any] = {}  # without a Content-Type the reference reads no body
        body_size = 0
        form_body = b""  # a form's (http/form_document.py), read once the schema is known
        content_type = headers.get(b"content-type")
        is_json = request_document.json_type(content_type)
        form = None if is_json else form_document.form_of(content_type)
        if form is not None:
            form_body = await read_body(receive, scope, self.max_body)
            # what its JSON would weigh at most: a file part's data URL is a third larger
            # (the size decides whether an async prediction's record keeps its input)
            body_size = len(form_body) * 4 // 3
        elif is_json is False:
            raise PlainError(415, request_document.UNSUPPORTED_TYPE)
        elif is_json:
            # a big body's bytes go once parsed, before the input is validated and re-encoded
            raw = await read_body(receive, scope, self.max_body)
            body_size = len(raw)
            body = request_document.parse(raw)
            del raw
        respond_async = b"respond-async" in headers.get(b"prefer", b"")

        prediction_id = path_id
        body_id = body.get("id")
        if path_id is not None:
            if not _ID.match(path_id):  # as for an id in the body: one rule for both
                raise HTTPError(422, _detail([("path", "prediction_id"), _ID_RULE, "value_error"]))
            if body_id is not None and body_id != path_id:
                raise HTTPError(422, _detail([("body", "id"), "prediction ID must match the ID "
                                              "supplied in the URL", "value_error"]))
            match await service.lookup(path_id, _kind(mode), evictions=False):
                case Running(existing) | Queued(existing):
                    scope[PREDICTION_KEY] = existing
                    await self._respond(scope, receive, send, existing, respond_async,
                                        wants_sse, created=False)
                    return
                case Finished() as finished:  # a retry of a finished id: never run again
                    await _respond_finished(send, finished, respond_async, wants_sse)
                    return
                case Stored() as stored:  # before a restart, or a replica's
                    await _respond_stored(send, stored, respond_async, wants_sse)
                    return
        elif body_id is not None:
            if not _ID.match(body_id):
                raise HTTPError(422, _detail([("body", "id"), _ID_RULE, "value_error"]))
            prediction_id = body_id

        service.check_accepting()
        if form is None:
            raw_input = body.get("input", {})
            if raw_input is None:
                raw_input = {}
            errors = service.validate(raw_input, mode)
        else:
            raw_input, errors = form_document.inputs(form_body, form, service.validator(mode))
            del form_body
            errors += service.validate(raw_input, mode)
        webhook, events, errors = _webhook_fields(body, errors)
        prefix = body.get("output_file_prefix")
        if prefix is not None and not (isinstance(prefix, str) and
                                       prefix.startswith(("http://", "https://"))):
            errors.append(FieldError("output_file_prefix", "must be an http:// or https:// URL"))
        model_context = body.get("context")
        if errors:
            raise HTTPError(422, {"detail": [
                {"loc": _loc(e.field), "msg": e.message,
                 "type": "value_error.missing" if e.kind is ErrorKind.MISSING else "value_error"}
                for e in errors
            ]})
        # accepted asynchronously: with a durable store, written before it is answered
        recorded = bool(respond_async or webhook)
        if recorded:
            service.check_store()
        timeout = request_timeout(scope)  # 400 for a bad header, before any refusal below
        listeners: list[Listener] = []
        if webhook and self.webhook_listener is not None:
            listeners.append(self.webhook_listener(webhook, events))
        context = {name: value.decode("latin-1") for name, key in _TRACE_CONTEXT
                   if (value := headers.get(key)) is not None}
        request = PredictionRequest(  # without an id, one is made once it has a place
            raw_input, id=prediction_id, mode=mode, webhook=webhook,
            webhook_events_filter=events, output_file_prefix=prefix,
            context=context or None, model_context=model_context, timeout=timeout)
        prediction = service.create(request, listeners=listeners, remember=True)
        scope[PREDICTION_KEY] = prediction
        if recorded:  # written before it is answered (with a durable store)
            accepted = await service.accept(prediction, request, body_size)
            if accepted is not None and respond_async and not wants_sse:
                await send_json(send, 202, accepted)  # as it was when accepted
                return
        await self._respond(scope, receive, send, prediction, respond_async, wants_sse,
                            created=True)

    async def _respond(self, scope: Scope, receive: Receive, send: Send,
                       prediction: Prediction, respond_async: bool, wants_sse: bool,
                       created: bool) -> None:
        if wants_sse and self.sse_handler is not None:
            await self.sse_handler(scope, receive, send, prediction, created)
            return
        if respond_async:
            await send_json(send, 202, prediction.to_dict())
            return
        if not await wait_or_cancel(self.service, prediction, receive, cancel=created):
            return
        # the store encoded the final object already: send those bytes, not a second dump
        finished = self.service.finished(prediction.id, prediction.kind)
        await send_json(send, 200, finished.body if finished is not None else prediction.encoded())

    async def cancel(self, scope: Scope, receive: Receive, send: Send,
                     prediction_id: str, mode: Mode = Mode.PREDICT) -> None:
        """200 for a running id (every time) and for a recently finished one (a no-op).

        The answer waits until the prediction has ended and carries its final state, so
        it tells the truth: `status` is `canceled`, or `succeeded`/`failed` when the
        prediction finished before the cancel reached it (a cancel can race the result
        frame already on its way). The wait is bounded: a run() that ignores the cancel
        has its worker stopped after COGSERVE_CANCEL_TIMEOUT.
        """
        service = self.service
        scope[PREDICTION_KEY] = service.running(prediction_id)
        running = await service.cancel_and_wait(prediction_id)
        kind = _kind(mode)
        match await service.lookup(prediction_id, kind, evictions=False):
            case Finished(body=body):
                await send_json(send, 200, body)
            case Running(ending) | Queued(ending):  # still ending (past the bound): as it is
                await send_json(send, 200, ending.to_dict())
            case _ if running is not None:  # ended, but kept nowhere (too big to keep)
                await send_json(send, 200, running.to_dict())
            case Stored(final=False, status=status):  # a replica runs it: cancel it there
                raise RunningElsewhere(prediction_id, kind, status)
            case Stored(body=body):
                await send_json(send, 200, body)
            case _:
                raise NothingToCancel(prediction_id, kind)

    async def get(self, scope: Scope, receive: Receive, send: Send,
                  prediction_id: str, mode: Mode = Mode.PREDICT) -> None:
        """`GET /predictions/{id}`: the current state, running or recently finished.

        Not in Cog's API: an addition for clients that poll instead of taking a webhook.
        """
        kind = _kind(mode)
        match await self.service.lookup(prediction_id, kind, same_kind=True):
            case Running(prediction) | Queued(prediction):
                await send_json(send, 200, prediction.to_dict())
            case Finished(body=body) | Stored(body=body):
                await send_json(send, 200, body)
            case Evicted(bounds):
                raise EvictedPrediction(prediction_id, kind, bounds)
            case _:
                raise UnknownPrediction(prediction_id, kind, recently=True)

    async def index(self, scope: Scope, receive: Receive, send: Send,
                   mode: Mode = Mode.PREDICT) -> None:
        """`GET /predictions?status=...&limit=...&cursor=...`: newest first, paged (an
        addition to Cog's API, like `GET /predictions/{id}`)."""
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        status = query.get("status", [None])[-1]
        if status is not None and status not in _STATUSES:
            raise HTTPError(400, {"error": f"status must be one of {', '.join(_STATUSES)}"})
        raw_limit = query.get("limit", [str(LIST_LIMIT)])[-1]
        if not raw_limit.isdigit() or not 1 <= int(raw_limit) <= LIST_MAX:
            raise HTTPError(400, {"error": f"limit must be a whole number from 1 to {LIST_MAX}"})
        limit = int(raw_limit)
        cursor = query.get("cursor", [None])[-1]
        kind = _kind(mode)
        try:
            page = await self.service.page(kind, status, limit, cursor)
        except ValueError:
            raise HTTPError(400, {"error": "cursor is not one this server gave"}) from None
        following = None
        if page.next is not None:
            following = scope["path"] + "?" + urlencode(
                {**({"status": status} if status else {}), "limit": limit, "cursor": page.next})
        await send_json(send, 200, b'{"results":[' + b",".join(page.bodies) + b'],"next":'
                        + orjson.dumps(following) + b"}")


def health_document(health: HealthSnapshot) -> dict[str, Any]:
    """`/health-check`'s JSON, in the reference's keys and order."""
    setup = health.setup
    doc: dict[str, Any] = {"status": health.status}
    if health.user_healthcheck_error is not None:
        doc["user_healthcheck_error"] = health.user_healthcheck_error
    doc["setup"] = {"started_at": setup.started_at, "completed_at": setup.completed_at,
                    "status": setup.status, "logs": setup.logs}
    # coglet's keys for what it can know (python_sdk, python: the model's, once its
    # worker has said); cogserve's own version under its name, where coglet's would be
    doc["version"] = {"cogserve": cogserve.__version__, **health.versions}
    if health.queue is not None:
        doc["queue"] = {"length": health.queue.length, "size": health.queue.size}
    if health.workers is not None:
        doc["workers"] = [{"id": w.id, "status": w.status, "pid": w.pid, "busy": w.busy}
                          for w in health.workers]
    if health.store_error is not None:  # why UNHEALTHY: the prediction store (--store)
        doc["store_error"] = health.store_error
    return doc


_at_capacity = _refusal_response(AtCapacity())
_AT_CAPACITY = HTTPError(_at_capacity.status, orjson.dumps(_at_capacity.body),
                         _at_capacity.headers)


async def _respond_stored(send: Send, stored: Stored, respond_async: bool,
                          wants_sse: bool) -> None:
    """A retried PUT of an id the store holds: never run again. Finished: its final
    object (an SSE client gets its `completed` event); still running on a replica:
    its state as stored, `202`."""
    if not stored.final:
        await send_json(send, 202, stored.body)
    elif wants_sse:
        from cogserve.http.sse import replay_finished

        await replay_finished(send, stored.frames, 0)
    else:
        await send_json(send, 202 if respond_async else 200, stored.body)


def _kind(mode: Mode) -> str:
    return "training" if mode is Mode.TRAIN else "prediction"


async def _respond_finished(send: Send, finished: Finished, respond_async: bool,
                            wants_sse: bool) -> None:
    if wants_sse:
        from cogserve.http.sse import replay_finished

        await replay_finished(send, finished.frames, finished.skipped)
    else:
        await send_json(send, 202 if respond_async else 200, finished.body)


def _refuse_large_body_early(service: Service, headers: dict[bytes, bytes]) -> None:
    """A body over EARLY_CHECK_BYTES that would be refused for want of a slot (or while
    the server is not ready) is refused before it is read, not after."""
    length = headers.get(b"content-length")
    if length is None or not length.isdigit() or int(length) <= EARLY_CHECK_BYTES:
        return
    service.check_accepting()
    service.check_capacity()


def _is_http_url(value: Any) -> bool:
    """An http(s) URL with a host: refused at once with 422 rather than failing later,
    where only the server log would say so."""
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        return False
    try:
        parts = urlsplit(value)
        return bool(parts.hostname) and (parts.port is None or parts.port > 0)
    except ValueError:  # a port out of range, an unclosed IPv6 bracket
        return False


def _webhook_fields(body: dict[str, Any], errors: list[FieldError]
                    ) -> tuple[str | None, frozenset[WebhookEvent] | None, list[FieldError]]:
    webhook = body.get("webhook")
    events = body.get("webhook_events_filter")
    if webhook is not None and not _is_http_url(webhook):
        errors.append(FieldError("webhook", f"{webhook!r} is not an http:// or https:// URL"))
        webhook = None
    # its shape was checked with the document's (http/request_document.py)
    chosen = None if events is None else frozenset(WebhookEvent(e) for e in events)
    return webhook, chosen, errors


def _loc(field: str) -> list[Any]:
    """The 422 location of a validation error's field: an input's name, a list item as
    the reference writes it (`words/1`, one string), or a client's unknown key exactly
    as sent."""
    if field in ("webhook", "output_file_prefix"):
        return ["body", field]
    if not field:
        return ["body", "input", "__root__"]
    return ["body", "input", field]


def _detail(item: list[Any]) -> dict[str, Any]:
    loc, msg, kind = item
    return {"detail": [{"loc": list(loc), "msg": msg, "type": kind}]}
