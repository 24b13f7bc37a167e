"""The /v1 routes: OpenAI's models, chat completions, completions and image generations.

Loaded by `cogserve.openai_api.OpenAIMount` on the first request under /v1. Each call
reads the body, checks the model's shape (`shapes.py`) and the `model` field, maps the
request to the model's inputs (`requests.py`), validates them with the model's own
validator and makes one prediction through `runtime.py`; the answer is built by
`answers.py`. Every error is answered in OpenAI's shape (`errors.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from cogserve.http.asgi import Receive, Scope, Send
from cogserve.http.deadline import request_timeout
from cogserve.http.responses import PREDICTION_KEY, RequestError, read_body, send_json
from cogserve.openai_api import CHAT, COMPLETIONS, IMAGES, MODELS, answers, mapping
from cogserve.openai_api.answers import Chunks, Kind
from cogserve.openai_api.errors import APIError, bad, from_refusal
from cogserve.openai_api.runtime import OpenAIRuntime
from cogserve.openai_api.shapes import Model, Shape
from cogserve.runtime.errors import Refusal
from cogserve.runtime.prediction import Prediction
from cogserve.wire.states import Event, Status

log = logging.getLogger("cogserve")

STREAM_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
Handler = Callable[[Scope, Receive, Send], Awaitable[None]]


class Routes:
    """The ASGI app under /v1."""

    def __init__(self, runtime: OpenAIRuntime, max_body: int) -> None:
        self.runtime = runtime
        self.max_body = max_body
        self.created = answers.now()
        self.table: dict[str, tuple[str, Handler]] = {
            MODELS: ("GET", self.models), CHAT: ("POST", self.chat),
            COMPLETIONS: ("POST", self.completions), IMAGES: ("POST", self.images),
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._route(scope, receive, send)
        except APIError as exc:
            await send_json(send, exc.status, exc.body(), exc.headers)
        except RequestError as exc:
            error = APIError(exc.status, exc.message)
            await send_json(send, exc.status, error.body())
        except Refusal as exc:
            error = from_refusal(exc)
            await send_json(send, error.status, error.body(), error.headers)

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"].rstrip("/")
        method = scope["method"]
        if path.startswith(MODELS + "/"):
            if method not in ("GET", "HEAD"):
                raise APIError(405, f"{method} {path} is not allowed: use GET")
            await self.model_info(scope, path[len(MODELS) + 1:], send)
            return
        route = self.table.get(path)
        if route is None:
            raise APIError(404, f"Unknown route {path}: this server answers "
                                f"{', '.join(f'{m} {p}' for p, (m, _) in self.table.items())}",
                           code="unknown_route")
        if method != route[0] and not (method == "HEAD" and route[0] == "GET"):
            raise APIError(405, f"{method} {path} is not allowed: use {route[0]}")
        await route[1](scope, receive, send)

    # ------------------------------------------------------------ the routes

    def _model(self, *shapes: Shape) -> Model:
        """The model, if it has one of `shapes` (404 saying why not)."""
        model = self.runtime.model()
        if model.shape is Shape.NONE:
            raise APIError(404, f"The model {model.name} is not served by the OpenAI API: "
                                f"{model.why}", code="model_not_supported")
        if model.shape not in shapes:
            other = ("POST /v1/images/generations" if model.shape is Shape.IMAGE
                     else "POST /v1/chat/completions or POST /v1/completions")
            raise APIError(404, f"The model {model.name} is a {model.shape} model: use "
                                f"{other}", code="wrong_route")
        return model

    def shape(self) -> dict[str, str]:
        """The model's shape and, for `none`, why (the playground shows it)."""
        try:
            model = self.runtime.model()
        except (Refusal, APIError) as exc:
            return {"shape": Shape.NONE.value, "why": str(exc)}
        return {"shape": model.shape.value, "why": model.why}

    def _card(self, model: Model) -> dict[str, Any]:
        return {"id": model.name, "object": "model", "created": self.created,
                "owned_by": "cogserve"}

    async def models(self, scope: Scope, receive: Receive, send: Send) -> None:
        model = self._model(Shape.LANGUAGE, Shape.IMAGE)
        await send_json(send, 200, {"object": "list", "data": [self._card(model)]})

    async def model_info(self, scope: Scope, name: str, send: Send) -> None:
        model = self._model(Shape.LANGUAGE, Shape.IMAGE)
        if name != model.name:
            raise _unknown_model(name, model)
        await send_json(send, 200, self._card(model))

    async def chat(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._text(scope, receive, send, Kind.CHAT)

    async def completions(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._text(scope, receive, send, Kind.TEXT)

    async def _text(self, scope: Scope, receive: Receive, send: Send, kind: Kind) -> None:
        model = self._model(Shape.LANGUAGE)
        body = await self._body(scope, receive, model)
        call = mapping.chat(model, body) if kind is Kind.CHAT else mapping.completion(model,
                                                                                        body)
        if call.stream:
            await self._stream(scope, receive, send, kind, model, call)
            return
        prediction = self._start(scope, call, None)
        if not await self.runtime.wait(prediction, receive):
            return  # the client left; the prediction is canceled
        _check_succeeded(prediction)
        text, chunks = answers.text_of(prediction.current_output())
        used = answers.usage(prediction.metrics, chunks)
        finish = answers.finish_reason(prediction.metrics, used["completion_tokens"],
                                       call.max_tokens)
        await send_json(send, 200, answers.completion(kind, prediction.id, model.name,
                                                      answers.now(), text, finish, used))

    async def images(self, scope: Scope, receive: Receive, send: Send) -> None:
        model = self._model(Shape.IMAGE)
        body = await self._body(scope, receive, model)
        call = mapping.image(model, body)
        if call.response_format == "b64_json" and self.runtime.uploads:
            raise bad("response_format", "b64_json needs the file itself; this server "
                                         "uploads its outputs (--upload-url): ask for url")
        prediction = self._start(scope, call, None)
        if not await self.runtime.wait(prediction, receive):
            return
        _check_succeeded(prediction)
        await send_json(send, 200, answers.images(prediction.current_output(),
                                                  call.response_format, answers.now()))

    # ------------------------------------------------------------ the parts

    async def _body(self, scope: Scope, receive: Receive, model: Model) -> dict[str, Any]:
        raw = await read_body(receive, scope, self.max_body)
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise bad(None, f"The body is not valid JSON: {exc}") from None
        if not isinstance(body, dict):
            raise bad(None, "The body must be a JSON object")
        name = body.get("model")
        if not isinstance(name, str) or not name:
            raise bad("model", f"model is required: this server serves {model.name!r}")
        if name != model.name:
            raise _unknown_model(name, model)
        return body

    def _start(self, scope: Scope, call: mapping.Call,
               listener: Callable[[Prediction, Event, dict[str, Any]], None] | None
               ) -> Prediction:
        timeout = request_timeout(scope)
        errors = self.runtime.errors(call.inputs)
        if errors:
            field, message = errors[0]
            param = call.param_of(field) if field else None
            raise bad(param, f"{param}: {message}" if param else message,
                      code="invalid_value")
        prediction = self.runtime.start(call.inputs, timeout=timeout, listener=listener)
        scope[PREDICTION_KEY] = prediction  # the access log line names it
        return prediction

    async def _stream(self, scope: Scope, receive: Receive, send: Send, kind: Kind,
                      model: Model, call: mapping.Call) -> None:
        feed = Feed()
        prediction = self._start(scope, call, feed.listener)
        chunks = Chunks(kind, prediction.id, model.name, answers.now())
        await send({"type": "http.response.start", "status": 200, "headers": STREAM_HEADERS})
        watcher = asyncio.ensure_future(feed.watch(receive))
        try:
            if not await feed.write(send, chunks.first(), chunks):
                self.runtime.cancel(prediction)
                return
        except asyncio.CancelledError:
            self.runtime.cancel(prediction)
            raise
        finally:
            watcher.cancel()
        if prediction.status is not Status.SUCCEEDED:
            error = _failure(prediction)
            await _end(send, answers.error_frame(error.body()))
            return
        if not prediction.iterator:  # a str output arrives whole, at the end
            text, _ = answers.text_of(prediction.output)
            feed.count = 1
            await _chunk(send, chunks.token(text))
        used = answers.usage(prediction.metrics, feed.count)
        finish = answers.finish_reason(prediction.metrics, used["completion_tokens"],
                                       call.max_tokens)
        await _end(send, chunks.last(finish, used if call.include_usage else None))


class Feed:
    """One streamed answer's pending tokens: the prediction's listener appends them (it
    may not await), `write` sends all that queued since it last woke as one chunk."""

    __slots__ = ("tokens", "waiter", "ended", "gone", "count")

    def __init__(self) -> None:
        self.tokens: list[str] = []
        self.waiter: asyncio.Future[None] | None = None
        self.ended = False
        self.gone = False
        self.count = 0  # tokens yielded

    def listener(self, prediction: Prediction, event: Event, payload: dict[str, Any]) -> None:
        if event is Event.OUTPUT:
            chunk = payload["chunk"]
            self.tokens.append(chunk if isinstance(chunk, str) else str(chunk))
        elif event is Event.COMPLETED:
            self.ended = True
        else:
            return
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def write(self, send: Send, first: bytes, chunks: Chunks) -> bool:
        """Send tokens until the prediction ends; False if the client went away."""
        if first:
            await _chunk(send, first)
        loop = asyncio.get_running_loop()
        while not self.gone:
            if self.tokens:
                tokens = self.tokens
                self.tokens = []
                self.count += len(tokens)
                await _chunk(send, chunks.tokens(tokens))
                continue
            if self.ended:
                return True
            self.waiter = loop.create_future()
            await self.waiter
            self.waiter = None
        return False

    async def watch(self, receive: Receive) -> None:
        """Wake the writer when the client disconnects, so the prediction is canceled."""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.gone = True
                waiter = self.waiter
                if waiter is not None and not waiter.done():
                    waiter.set_result(None)
                return


def _unknown_model(name: str, model: Model) -> APIError:
    return APIError(404, f"The model {name!r} does not exist: this server serves "
                         f"{model.name!r}", param="model", code="model_not_found")


def _failure(prediction: Prediction) -> APIError:
    if prediction.status is Status.CANCELED:
        return APIError(500, f"The prediction {prediction.id} was canceled",
                        type_="server_error", code="prediction_canceled")
    return APIError(500, f"The prediction {prediction.id} failed: {prediction.error}",
                    type_="server_error", code="prediction_failed")


def _check_succeeded(prediction: Prediction) -> None:
    if prediction.status is not Status.SUCCEEDED:
        raise _failure(prediction)


async def _chunk(send: Send, body: bytes) -> None:
    await send({"type": "http.response.body", "body": body, "more_body": True})


async def _end(send: Send, body: bytes) -> None:
    await send({"type": "http.response.body", "body": body, "more_body": False})
