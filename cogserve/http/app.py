"""The ASGI application: one small router in front of Cog's routes (and V2's).

A plain ASGI callable rather than a framework: there are a dozen routes, and the
prediction round trip is the hot path, so each request costs one dict lookup (or a
prefix split for routes with an id) before its handler runs. Everything it routes to
is passed in (`cogserve.assembly.build_app` assembles it); nothing is attached
afterwards.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from cogserve.http.asgi import ASGIApp, Receive, Scope, Send
from cogserve.http.cog_routes import CogRoutes, refusal_response
from cogserve.http.responses import HTTPError, PlainError, RequestError, send_json, send_plain
from cogserve.protocol import Mode
from cogserve.runtime.errors import Refusal
from cogserve.runtime.service import Service
from cogserve.states import Status

log = logging.getLogger("cogserve")

Handler = Callable[[Scope, Receive, Send], Awaitable[None]]
ItemHandler = Callable[[Scope, Receive, Send, str, str], Awaitable[None]]
Guard = Callable[[Scope], None]  # raises HTTPError for a request it refuses


class Observer(Protocol):
    """What is put around every request (`observability.requests.RequestObserver`): a
    protocol here, so http/ never imports observability (which imports http/)."""

    def around(self, respond: Handler, route_of: Callable[[str], str]) -> Handler: ...


# route templates of the id routes, for `App.route_of`
_ITEM_TEMPLATES = {"/predictions/": "{prediction_id}", "/trainings/": "{training_id}"}


class App:
    def __init__(self, service: Service, cog: CogRoutes, *,
                 routes: dict[str, dict[str, Handler]] | None = None,
                 prefixed: Sequence[tuple[str, ItemHandler]] = (),
                 mounts: Sequence[tuple[str, ASGIApp]] = (),
                 guard: Guard | None = None, observer: Observer | None = None
                 ) -> None:
        """`routes` add to (or replace) the exact routes, `prefixed` add routes by path
        prefix, `mounts` are other front ends under a prefix; `guard` sees every request;
        `observer` is put around every request (metrics, access log, traces)."""
        self.service = service
        self.cog = cog
        self.exact: dict[str, dict[str, Handler]] = {
            "/": {"GET": cog.root},
            "/health-check": {"GET": cog.health_check},
            "/openapi.json": {"GET": cog.openapi},
            "/predictions": {"POST": cog.create},
            "/shutdown": {"POST": cog.shutdown},
        }
        self.prefixed: list[tuple[str, ItemHandler]] = [
            ("/predictions/", self._prediction_item)]
        if not service.config.predict_ref:  # train-only: say so, rather than a bare 404
            self.exact["/predictions"] = {"POST": self._no_predictor}
            self.prefixed = [("/predictions/", self._no_predictor)]
        if service.config.train_ref:
            self.exact["/trainings"] = {"POST": self._create_training}
            self.prefixed.append(("/trainings/", self._training_item))
        self.exact.update(routes or {})
        self.prefixed.extend(prefixed)
        # extra front ends (the V2 protocol): a path prefix and an ASGI callable
        self.mounts = tuple(mounts)
        # access control (http/security.py): raises HTTPError for a refused request
        self.guard = guard
        # what answers a request: `respond`, or the observer around it (metrics,
        # access logs, traces: `observability/requests.py`)
        self.handle: Handler = (self.respond if observer is None
                                else observer.around(self.respond, self.route_of))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self._lifespan(receive, send)
            return
        await self.handle(scope, receive, send)

    async def respond(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Route one HTTP request; refusals and unexpected errors become JSON answers,
        unknown routes and methods bodiless ones (as the reference answers them)."""
        try:
            await self._dispatch(scope, receive, send)
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

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.guard is not None:
            self.guard(scope)
        path: str = scope["path"]
        method: str = scope["method"]
        routes = self.exact.get(path)
        if routes is not None:
            handler = routes.get(method)
            if handler is None:
                # HEAD is GET without the body (the ASGI server drops it), as the reference
                # allows on /health-check: load balancers and `curl -I` probe with it
                handler = routes.get("GET") if method == "HEAD" else None
                if handler is None:
                    raise _not_allowed(routes)
            await handler(scope, receive, send)
            return
        for prefix, item_handler in self.prefixed:
            if path.startswith(prefix):
                await item_handler(scope, receive, send, path[len(prefix):], method)
                return
        for prefix, mounted in self.mounts:
            if path == prefix or path.startswith(prefix + "/"):
                await mounted(scope, receive, send)
                return
        raise PlainError(404)

    def route_of(self, path: str) -> str:
        """The route template a path matched (`/predictions/{prediction_id}`), for metrics
        and logs: label values must be a small fixed set, never the ids themselves."""
        if path in self.exact:
            return path
        for prefix, _ in self.prefixed:
            if path.startswith(prefix):
                item = _ITEM_TEMPLATES.get(prefix)
                if item is None:  # e.g. the playground's files under /docs/
                    return prefix + "{file}"
                ident, _, action = path[len(prefix):].partition("/")
                if not ident or action not in ("", "cancel"):
                    return "other"
                return prefix + item + ("/cancel" if action else "")
        for prefix, mounted in self.mounts:
            if path == prefix or path.startswith(prefix + "/"):
                route_of = getattr(mounted, "route_of", None)
                return route_of(path) if route_of is not None else prefix
        return "other"

    async def _prediction_item(self, scope: Scope, receive: Receive, send: Send,
                               rest: str, method: str, mode: Mode = Mode.PREDICT) -> None:
        ident, _, action = rest.partition("/")
        if not ident:
            raise PlainError(404)
        if action == "":
            if method == "PUT":
                await self.cog.create(scope, receive, send, path_id=ident, mode=mode)
            elif method in ("GET", "HEAD"):
                await self.cog.get(scope, receive, send, ident, mode)
            else:
                raise _not_allowed({"PUT": None, "GET": None})
        elif action == "cancel":
            if method != "POST":
                raise _not_allowed({"POST": None})
            await self.cog.cancel(scope, receive, send, ident, mode)
        else:
            raise PlainError(404)

    async def _training_item(self, scope: Scope, receive: Receive, send: Send,
                             rest: str, method: str) -> None:
        await self._prediction_item(scope, receive, send, rest, method, mode=Mode.TRAIN)

    async def _create_training(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.cog.create(scope, receive, send, mode=Mode.TRAIN)

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


def _not_allowed(routes: dict[str, Any]) -> PlainError:
    """405 with no body and the methods allowed, comma-joined without spaces, as coglet
    (axum) answers."""
    allow = ",".join(sorted({*routes, "HEAD"} if "GET" in routes else routes)).encode()
    return PlainError(405, None, [(b"allow", allow)])
