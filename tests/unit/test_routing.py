"""The route matcher shared by Cog's routes and the V2 mount (`cogserve/http/routing.py`):
patterns, templates, parameters, mounts, and one match per request."""

from __future__ import annotations

from typing import Any

import pytest

from cogserve.http.responses import send_json
from cogserve.http.routing import NOT_FOUND, ROUTE_KEY, Match, Router, compile_pattern

from .helpers import call, run
from .test_router import app as stub_app


async def h_item(scope: Any, receive: Any, send: Any) -> None: ...
async def h_cancel(scope: Any, receive: Any, send: Any) -> None: ...
async def h_file(scope: Any, receive: Any, send: Any) -> None: ...
async def h_list(scope: Any, receive: Any, send: Any) -> None: ...


TABLE = {
    "/items": {"GET": h_list},
    "/items/{item_id}": {"GET": h_item},
    "/items/{item_id}/cancel": {"POST": h_cancel},
    "/files/{file:path}": {"GET": h_file},
}


@pytest.mark.parametrize(("path", "template", "params"), [
    ("/items", "/items", {}),
    ("/items/a1", "/items/{item_id}", {"item_id": "a1"}),
    ("/items/a1/", "/items/{item_id}", {"item_id": "a1"}),  # one trailing slash, as before
    ("/items/a1/cancel", "/items/{item_id}/cancel", {"item_id": "a1"}),
    ("/files/", "/files/{file}", {"file": ""}),  # :path takes the rest, maybe empty
    ("/files/a/b.js", "/files/{file}", {"file": "a/b.js"}),
])
def test_a_match_gives_template_handlers_and_parameters(path: str, template: str,
                                                        params: dict[str, str]) -> None:
    found = Router(TABLE).match(path)
    assert found is not None
    assert (found.template, dict(found.params), found.app) == (template, params, None)
    assert dict(found.methods) == TABLE[found.template.replace("{file}", "{file:path}")]


@pytest.mark.parametrize("path", ["/items/", "/items//cancel", "/items/a1//", "/items/a1/cancel/",
                                  "/items/a1/other", "/itemsx", "/files", "/", ""])
def test_paths_no_route_takes_match_nothing(path: str) -> None:
    assert Router(TABLE).match(path) is None


def test_patterns_are_tried_in_table_order() -> None:
    router = Router({"/a/{x}": {"GET": h_item}, "/a/{rest:path}": {"GET": h_file}})
    assert router.match("/a/b") is not None and router.match("/a/b").template == "/a/{x}"
    assert router.match("/a/b/c").template == "/a/{rest}"  # type: ignore[union-attr]


@pytest.mark.parametrize("pattern", ["items/{x}", "/items/x{y}", "/{a}/{a}", "/{p:path}/x",
                                     "/{x:int}"])
def test_a_malformed_pattern_is_refused_when_compiled(pattern: str) -> None:
    with pytest.raises(ValueError):
        compile_pattern(pattern)


def test_a_mount_takes_its_prefix_and_everything_under_it() -> None:
    async def plain(scope: Any, receive: Any, send: Any) -> None: ...

    class Own:
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None: ...

        def match(self, path: str) -> Match:
            return Match("/own/{x}", {}, {"x": path}, self)

    own = Own()
    router = Router(TABLE, [("/plain", plain), ("/own", own)])
    for path in ("/plain", "/plain/", "/plain/a/b"):
        found = router.match(path)
        assert found is not None and (found.template, found.app) == ("/plain", plain)
    found = router.match("/own/z")
    assert found is not None and (found.template, found.app, found.params) == (
        "/own/{x}", own, {"x": "/own/z"})
    assert router.match("/plainx") is None and router.match("/ownx") is None
    assert router.match("/items/a1").template == "/items/{item_id}"  # type: ignore[union-attr]


def test_the_table_wins_over_a_mount_and_the_app_names_the_rest_other() -> None:
    async def mounted(scope: Any, receive: Any, send: Any) -> None: ...

    router = Router({"/m/own": {"GET": h_item}}, [("/m", mounted)])
    assert router.match("/m/own").app is None  # type: ignore[union-attr]
    assert router.match("/m/else").app is mounted  # type: ignore[union-attr]
    a, _ = stub_app()
    assert a.match("/nowhere") is NOT_FOUND and NOT_FOUND.template == "other"


def test_one_match_per_request_read_by_the_observer_and_the_handler() -> None:
    """The observer's label and the dispatch come from the same Match, made once."""
    seen: list[tuple[str, Any]] = []

    class Observer:
        def around(self, respond: Any) -> Any:
            async def observed(scope: Any, receive: Any, send: Any) -> None:
                seen.append(("observer", scope[ROUTE_KEY]))
                await respond(scope, receive, send)
            return observed

    async def handler(scope: Any, receive: Any, send: Any) -> None:
        seen.append(("handler", scope[ROUTE_KEY]))
        await send_json(send, 200, {})

    async def body() -> None:
        a, _ = stub_app(routes={"/things/{thing}": {"GET": handler}}, observer=Observer())
        calls = 0
        match = a.router.match

        def counted(path: str) -> Match | None:
            nonlocal calls
            calls += 1
            return match(path)

        a.router.match = counted  # type: ignore[method-assign]
        assert (await call(a, "GET", "/things/t9")).status == 200
        assert calls == 1
        (who1, m1), (who2, m2) = seen
        assert (who1, who2) == ("observer", "handler") and m1 is m2
        assert (m1.template, dict(m1.params)) == ("/things/{thing}", {"thing": "t9"})

    run(body)


def test_an_id_route_hands_its_parameter_and_mode_to_cogs_handlers() -> None:
    async def body() -> None:
        a, routes = stub_app(train=True)
        for method, path in [("GET", "/predictions/p1/"), ("HEAD", "/trainings/t1"),
                             ("DELETE", "/trainings/t1")]:
            await call(a, method, path)
        assert routes.calls == [("get", "p1", "predict"), ("get", "t1", "train")]

    run(body)


def test_a_train_only_model_answers_every_predictions_path_with_its_404() -> None:
    async def body() -> None:
        a, _ = stub_app(train=True, predict=False)
        for method, path in [("GET", "/predictions/p1"), ("DELETE", "/predictions/p1/cancel"),
                             ("PUT", "/predictions/"), ("POST", "/predictions/p1/x")]:
            answer = await call(a, method, path)
            assert answer.status == 404 and b"has no predictor" in answer.body, (method, path)
        assert a.match("/predictions/p1").template == "/predictions/{prediction_id}"
        assert (await call(a, "GET", "/predictions")).headers[b"allow"] == b"POST"

    run(body)
