"""The ASGI application: one small router in front of Cog's routes (and V2's).

A plain ASGI callable rather than a framework: there are a dozen routes, and the
prediction round trip is the hot path. The routes are a table of data (pattern ->
method -> handler, `http/routing.py`), matched once per request in `__call__`: the
`Match` (template, handlers, path parameters) goes into the scope, where the observer
reads the template it labels the request with and `respond` the handler. A route without
parameters costs one dict lookup. Everything it routes to is passed in
(`cogserve.assembly.build_app` assembles it); nothing is attached afterwards.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from cogserve.http.asgi import ASGIApp, Receive, Scope, Send
from cogserve.http.cog_routes import CogRoutes, refusal_response
from cogserve.http.responses import HTTPError, PlainError, RequestError, send_json, send_plain
from cogserve.http.routing import ANY, NOT_FOUND, ROUTE_KEY, Handler, Match, Router, Table
from cogserve.runtime.errors import Refusal
from cogserve.runtime.service import Service
from cogserve.wire.protocol import Mode
from cogserve.wire.states import Status

__all__ = ["App", "Guard", "Handler", "Observer"]

log = logging.getLogger("cogserve")

Guard = Callable[[Scope], None]  # raises HTTPError for a request it refuses


class Observer(Protocol):
    """What is put around every request (`observability.requests.RequestObserver`): a
    protocol here, so http/ never imports observability (which imports http/). It finds
    the request's route template in the scope (`scope[ROUTE_KEY].template`)."""

    def around(self, respond: Handler) -> Handler: ...


class App:
    def __init__(self, service: Service, cog: CogRoutes, *, routes: Table | None = None,
                 mounts: Sequence[tuple[str, ASGIApp]] = (),
                 guard: Guard | None = None, observer: Observer | None = None
                 ) -> None:
        """`routes` add to (or replace, pattern by pattern) Cog's routes, `mounts` are other
        front ends under a prefix; `guard` sees every request; `observer` is put around
        every request (metrics, access log, traces)."""
        self.service = service
        self.cog = cog
        table: dict[str, Mapping[str, Handler]] = {
            "/": {"GET": cog.root},
            "/health-check": {"GET": cog.health_check},
            "/openapi.json": {"GET": cog.openapi},
            "/predictions": {"POST": cog.create, "GET": cog.index},
            "/shutdown": {"POST": cog.shutdown},
        }
        if service.config.predict_ref:
            table.update(self._items(Mode.PREDICT))
        else:  # train-only: say so, rather than a bare 404
            refuse = {ANY: self._no_predictor}  # any method, any path under /predictions/
            table.update({"/predictions": {"POST": self._no_predictor},
                          "/predictions/{prediction_id}": refuse,
                          "/predictions/{prediction_id}/cancel": refuse,
                          "/predictions/{path:path}": refuse})
        if service.config.train_ref:
            table["/trainings"] = {"POST": self._create_training, "GET": self._list_trainings}
            table.update(self._items(Mode.TRAIN))
        table.update(routes or {})
        # the table, then the extra front ends (the V2 protocol): a path prefix and an ASGI
        # callable, with its own `match` for its route templates if it has one
        self.router = Router(table, mounts)
        # access control (http/security.py): raises HTTPError for a refused request
        self.guard = guard
        # what answers a request: `respond`, or the observer around it (metrics,
        # access logs, traces: `observability/requests.py`)
        self.handle: Handler = self.respond if observer is None else observer.around(self.respond)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self._lifespan(receive, send)
            return
        scope[ROUTE_KEY] = self.router.match(scope["path"]) or NOT_FOUND
        await self.handle(scope, receive, send)

    def match(self, path: str) -> Match:
        """The route a path takes: its template, handlers and parameters."""
        return self.router.match(path) or NOT_FOUND

    async def respond(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one HTTP request from its route (`__call__` matched it); refusals and
        unexpected errors become JSON answers, unknown routes and methods bodiless ones
        (as the reference answers them)."""
        route: Match = scope[ROUTE_KEY]
        try:
            if self.guard is not None:
                self.guard(scope)
            if route.app is not None:  # a mount (V2) answers for itself, 404s and 405s too
                await route.app(scope, receive, send)
                return
            handler = route.methods.get(scope["method"])
            if handler is None:
                handler = _other_method(route.methods, scope["method"])
            await handler(scope, receive, send)
        except HTTPError as exc:
            await send_json(send, exc.status, exc.body, exc.headers)
        except PlainError as exc:
            await send_plain(send, exc)
        except RequestError as exc:
            await send_json(send, exc.status, {"error": exc.message})
        except Refusal as exc:  # mounted front ends map their own; this is Cog's routes
            answer = refusal_response(exc)
            await send_json(send, answer.status, answer.body, answer.headers)
        except Exception:
            log.exception("unhandled error in %s %s", scope["method"], scope["path"])
            await send_json(send, 500, {"error": "Internal server error"})

    def _items(self, mode: Mode) -> dict[str, Mapping[str, Handler]]:
        """`/predictions/{prediction_id}` (PUT creates, GET reads) and its `/cancel`; the
        same under `/trainings` for `Mode.TRAIN`."""
        cog = self.cog
        base, key = (("/predictions", "prediction_id") if mode is Mode.PREDICT
                     else ("/trainings", "training_id"))

        async def put(scope: Scope, receive: Receive, send: Send) -> None:
            await cog.create(scope, receive, send, path_id=scope[ROUTE_KEY].params[key],
                             mode=mode)

        async def get(scope: Scope, receive: Receive, send: Send) -> None:
            await cog.get(scope, receive, send, scope[ROUTE_KEY].params[key], mode)

        async def cancel(scope: Scope, receive: Receive, send: Send) -> None:
            await cog.cancel(scope, receive, send, scope[ROUTE_KEY].params[key], mode)

        item = f"{base}/{{{key}}}"
        return {item: {"PUT": put, "GET": get}, item + "/cancel": {"POST": cancel}}

    async def _create_training(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.cog.create(scope, receive, send, mode=Mode.TRAIN)

    async def _list_trainings(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.cog.index(scope, receive, send, mode=Mode.TRAIN)

    async def _no_predictor(self, *_: Any) -> None:
        raise HTTPError(404, {"error": "This model has no predictor: its cog.yaml names only "
                                       "`train:`, not `run:`/`predict:`. Use POST /trainings.",
                              "status": Status.FAILED})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.service.start()
                except Exception as exc:  # noqa: BLE001
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.service.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return


def _other_method(methods: Mapping[str, Handler], method: str) -> Handler:
    """A method the route does not name: HEAD is GET without the body (the ASGI server
    drops it), as the reference allows on /health-check (load balancers and `curl -I`
    probe with it); then a handler of any method (ANY); else 404 for no route, or 405 with
    the methods allowed, comma-joined without spaces, as coglet (axum) answers."""
    handler = methods.get("GET") if method == "HEAD" else None
    if handler is None:
        handler = methods.get(ANY)
    if handler is not None:
        return handler
    if not methods:
        raise PlainError(404)
    allow = ",".join(sorted({*methods, "HEAD"} if "GET" in methods else methods)).encode()
    raise PlainError(405, None, [(b"allow", allow)])
