"""The OpenAI API at /v1 for Cog language and image models (`--no-openai` leaves it out).

`GET /v1/models`, `POST /v1/chat/completions`, `POST /v1/completions` for a model with a
text prompt and text output (`ConcatenateIterator[str]`), `POST /v1/images/generations`
for one with a text prompt and file output; derived from the model's schema
(`shapes.py`), every call a prediction like any other. Named `openai_api` so it never
shadows the `openai` SDK; the server needs no SDK.

This module is what `assembly` imports: `mount` gives the app a small ASGI callable
that imports the routes on the first request under /v1, so a server that nobody asks
for the OpenAI API starts and serves as it did without it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from cogserve.http.asgi import Receive, Scope, Send
from cogserve.http.responses import HTTPError
from cogserve.http.routing import NO_PARAMS, Match

if TYPE_CHECKING:
    from cogserve.openai_api.routes import Routes
    from cogserve.runtime.service import Service

PATH = "/v1"
MODELS = PATH + "/models"
MODEL = MODELS + "/{model}"  # a template: GET /v1/models/{model}
CHAT = PATH + "/chat/completions"
COMPLETIONS = PATH + "/completions"
IMAGES = PATH + "/images/generations"


def mount(service: Service, max_body: int) -> OpenAIMount:
    return OpenAIMount(service, max_body)


class OpenAIMount:
    """/v1: imports the routes on the first request, then hands every request to them."""

    def __init__(self, service: Service, max_body: int) -> None:
        self.service = service
        self.max_body = max_body
        self._routes: Routes | None = None
        # the route templates that label metrics, access logs and traces
        self._matches = {template: Match(template, MappingProxyType({}), NO_PARAMS, self)
                         for template in (PATH, MODELS, MODEL, CHAT, COMPLETIONS, IMAGES)}

    def match(self, path: str) -> Match:
        """The template of a path under /v1 (`/v1` itself for one no route has)."""
        path = path.rstrip("/")
        found = self._matches.get(path)
        if found is None:
            found = self._matches[MODEL if path.startswith(MODELS + "/") else PATH]
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._load()(scope, receive, send)

    def _load(self) -> Routes:
        routes = self._routes
        if routes is None:
            module = importlib.import_module("cogserve.openai_api.routes")
            runtime = importlib.import_module("cogserve.openai_api.runtime")
            routes = self._routes = module.Routes(runtime.OpenAIRuntime(self.service),
                                                  self.max_body)
        return routes

    def page_settings(self) -> dict[str, Any]:
        """/v1 as the playground shows it: where, and the model's shape now (`none` with
        why, for a model of neither shape or one still loading)."""
        return {"path": PATH, **self._load().shape()}


def guarded(guard: Callable[[Scope], None]) -> Callable[[Scope], None]:
    """The bearer-token guard, with its 401 under /v1 in OpenAI's error shape (the SDK
    sends the token as `Authorization: Bearer`, its api_key)."""

    def check(scope: Scope) -> None:
        try:
            guard(scope)
        except HTTPError as exc:
            if exc.status != 401 or not scope["path"].startswith(PATH + "/"):
                raise
            raise HTTPError(401, {"error": {
                "message": "Incorrect API key: send the server's token (COGSERVE_AUTH_TOKEN) "
                           "as the api_key, `Authorization: Bearer <token>`",
                "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}},
                exc.headers) from None

    return check
