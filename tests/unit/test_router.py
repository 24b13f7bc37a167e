"""The app's router: exact routes, id routes, mounts, 404/405, and the one place where
the runtime's refusals and unreadable requests become Cog's answers."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import orjson

from cogserve.http.app import App
from cogserve.http.responses import RequestError, send_json
from cogserve.runtime.errors import (
    AlreadyRunning,
    AtCapacity,
    InputNotSendable,
    NotReady,
    UnknownPrediction,
)
from cogserve.wire.states import Health

from .helpers import call, run


class StubRoutes:
    """Stands in for CogRoutes: each handler records its call, or raises what it is told."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.raise_: Exception | None = None
        self.max_body = 1024

    async def _answer(self, send: Any, *call: Any) -> None:
        self.calls.append(call)
        if self.raise_ is not None:
            raise self.raise_
        await send_json(send, 200, {"handled": call[0]})

    async def root(self, scope: Any, receive: Any, send: Any) -> None:
        await self._answer(send, "root")

    async def health_check(self, scope: Any, receive: Any, send: Any) -> None:
        await self._answer(send, "health_check")

    async def openapi(self, scope: Any, receive: Any, send: Any) -> None:
        await self._answer(send, "openapi")

    async def shutdown(self, scope: Any, receive: Any, send: Any) -> None:
        await self._answer(send, "shutdown")

    async def create(self, scope: Any, receive: Any, send: Any, path_id: str | None = None,
                     mode: Any = "predict") -> None:
        await self._answer(send, "create", path_id, str(mode))

    async def get(self, scope: Any, receive: Any, send: Any, ident: str, mode: Any) -> None:
        await self._answer(send, "get", ident, str(mode))

    async def cancel(self, scope: Any, receive: Any, send: Any, ident: str, mode: Any) -> None:
        await self._answer(send, "cancel", ident, str(mode))

    async def index(self, scope: Any, receive: Any, send: Any, mode: Any = "predict") -> None:
        await self._answer(send, "index", str(mode))


def app(*, train: bool = False, predict: bool = True, **kwargs: Any) -> tuple[App, StubRoutes]:
    config = SimpleNamespace(predict_ref="run.py:Runner" if predict else None,
                             train_ref="train.py:train" if train else None)
    routes = StubRoutes()
    return App(SimpleNamespace(config=config), routes, **kwargs), routes  # type: ignore[arg-type]


def test_exact_and_id_routes_reach_their_handlers() -> None:
    async def body() -> None:
        a, routes = app(train=True)
        for method, path in [("GET", "/"), ("GET", "/health-check"), ("HEAD", "/health-check"),
                             ("POST", "/predictions"), ("PUT", "/predictions/abc"),
                             ("GET", "/predictions/abc"), ("POST", "/predictions/abc/cancel"),
                             ("PUT", "/trainings/t1"), ("POST", "/trainings"),
                             ("GET", "/predictions"), ("GET", "/trainings")]:
            assert (await call(a, method, path)).status == 200, (method, path)
        assert routes.calls == [
            ("root",), ("health_check",), ("health_check",), ("create", None, "predict"),
            ("create", "abc", "predict"), ("get", "abc", "predict"),
            ("cancel", "abc", "predict"), ("create", "t1", "train"), ("create", None, "train"),
            ("index", "predict"), ("index", "train")]

    run(body)


def test_unknown_paths_are_404_and_wrong_methods_405_with_allow() -> None:
    async def body() -> None:
        a, routes = app()
        assert (await call(a, "GET", "/nope")).status == 404
        assert (await call(a, "PUT", "/predictions/")).status == 404
        assert (await call(a, "GET", "/predictions/abc/nope")).status == 404
        wrong = await call(a, "DELETE", "/health-check")
        assert wrong.status == 405 and wrong.headers[b"allow"] == b"GET,HEAD"
        wrong = await call(a, "GET", "/predictions/abc/cancel")
        assert wrong.status == 405 and wrong.headers[b"allow"] == b"POST"
        wrong = await call(a, "DELETE", "/predictions")  # GET lists them (issue 27)
        assert wrong.status == 405 and wrong.headers[b"allow"] == b"GET,HEAD,POST"
        assert routes.calls == []

    run(body)


def test_a_train_only_model_answers_predictions_with_404_saying_so() -> None:
    async def body() -> None:
        a, _ = app(train=True, predict=False)
        answer = await call(a, "POST", "/predictions")
        assert answer.status == 404 and b"has no predictor" in answer.body

    run(body)


def test_mounts_routes_and_guard_are_passed_in() -> None:
    async def body() -> None:
        seen: list[str] = []

        async def v2(scope: Any, receive: Any, send: Any) -> None:
            seen.append(scope["path"])
            await send_json(send, 200, {})

        async def extra(scope: Any, receive: Any, send: Any) -> None:
            await send_json(send, 201, {})

        def guard(scope: Any) -> None:
            if scope["path"] == "/secret":
                raise RequestError(401, "no")

        a, _ = app(mounts=[("/v2", v2)], routes={"/docs": {"GET": extra}}, guard=guard)
        assert (await call(a, "GET", "/v2")).status == 200
        assert (await call(a, "GET", "/v2/models/m")).status == 200
        assert (await call(a, "GET", "/v2x")).status == 404
        assert seen == ["/v2", "/v2/models/m"]
        assert (await call(a, "GET", "/docs")).status == 201
        assert (await call(a, "GET", "/secret")).status == 401

    run(body)


def test_refusals_become_cogs_status_and_body_in_one_place() -> None:
    cases = [
        (NotReady("Setup has not finished yet.", Health.STARTING), 503,
         {"error": "Setup has not finished yet.", "status": "failed"}),
        (AtCapacity(), 409, {"error": "At capacity - all prediction slots busy",
                             "status": "failed"}),
        (AlreadyRunning("p1"), 409, {"error": "A prediction with id 'p1' is already running",
                                     "status": "failed"}),
        (InputNotSendable("too deep"), 422,
         {"detail": [{"loc": ["body", "input"], "type": "value_error", "msg": "too deep"}]}),
        (UnknownPrediction("p1"), 404, {"error": "No prediction with id 'p1' is running"}),
        (RequestError(413, "too big"), 413, {"error": "too big"}),
    ]

    async def body() -> None:
        a, routes = app()
        for exc, status, expected in cases:
            routes.raise_ = exc
            answer = await call(a, "POST", "/predictions")
            assert (answer.status, orjson.loads(answer.body)) == (status, expected), exc

    run(body)


def test_an_unexpected_error_is_a_500_without_details() -> None:
    async def body() -> None:
        a, routes = app()
        routes.raise_ = KeyError("secret detail")
        answer = await call(a, "GET", "/")
        assert answer.status == 500 and b"secret" not in answer.body

    run(body)
