"""The playground's routes over HTTP: the page, its files, its settings, --no-playground.

What the page does in a browser is tests/test_playground_browser.py.
"""

from __future__ import annotations

import pathlib
import re
from collections.abc import Iterator

import pytest
from harness import Server

import cogserve

PACKAGE = pathlib.Path(cogserve.__file__).parent


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with Server("playground_image", "--model-name", "gradients") as running:
        yield running


@pytest.mark.parametrize("path", ["/docs", "/playground"])
def test_the_page_is_served_at_docs_and_playground(server: Server, path: str) -> None:
    response = server.client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert "<title>cogserve playground</title>" in response.text
    csp = response.headers["content-security-policy"]
    assert "connect-src 'self'" in csp and "script-src 'self'" in csp
    # every file the page loads is this server's, relative (works behind a path prefix)
    for url in re.findall(r'(?:src|href)="([^"]+)"', response.text):
        assert url.startswith(("docs/", "openapi.json", "data:")), url
    assert server.client.head(path).status_code == 200


@pytest.mark.parametrize(("name", "kind"), [("main.js", "text/javascript"),
                                            ("fields.js", "text/javascript"),
                                            ("playground.css", "text/css")])
def test_its_files_come_from_the_package(server: Server, name: str, kind: str) -> None:
    response = server.client.get(f"/docs/{name}")
    assert response.status_code == 200
    assert response.headers["content-type"] == f"{kind}; charset=utf-8"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.content == (PACKAGE / "playground" / name).read_bytes()


def test_settings_the_schema_does_not_carry(server: Server) -> None:
    response = server.client.get("/docs/playground.json")
    assert response.status_code == 200
    settings = response.json()
    # /v1: an image model without a text prompt is served by no OpenAI route, and why
    openai = settings.pop("openai")
    assert (openai["path"], openai["shape"]) == ("/v1", "none")
    assert "no text input named prompt" in openai["why"]
    assert settings == {"model_name": "gradients", "model_version": None,
                        "max_body_bytes": 128 * 1024 * 1024,
                        "mcp": {"path": "/mcp", "installed": True, "install": None}}


@pytest.mark.parametrize("path", ["/docs/nothing.js", "/docs/index.html", "/docs/../cli.py",
                                  "/docs/sub/main.js"])
def test_unknown_files_are_404(server: Server, path: str) -> None:
    response = server.client.get(path)
    assert response.status_code == 404 and response.content == b""  # as any unknown route


def test_a_trailing_slash_is_sent_to_the_page(server: Server) -> None:
    response = server.client.get("/docs/")
    assert response.status_code == 308
    assert response.headers["location"] == "../docs"  # relative: works behind a path prefix
    assert server.client.get("/docs/", follow_redirects=True).url.path == "/docs"


def test_only_get_and_head(server: Server) -> None:
    assert server.client.post("/docs/main.js").status_code == 405
    response = server.client.post("/docs")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET,HEAD"


def test_root_still_points_at_the_page(server: Server) -> None:
    assert server.client.get("/").json()["docs_url"] == "/docs"


def test_no_playground_turns_it_off() -> None:
    with Server("playground_image", "--no-playground") as server:
        for path in ("/docs", "/playground", "/docs/main.js", "/docs/playground.json"):
            assert server.client.get(path).status_code == 404, path
        assert server.predict().json()["status"] == "succeeded"  # the API is unchanged


def test_with_a_token_the_page_is_open_and_the_api_is_not() -> None:
    with Server("playground_image", env={"COGSERVE_AUTH_TOKEN": "sekrit"}) as server:
        for path in ("/docs", "/playground", "/docs/main.js", "/docs/playground.css"):
            assert server.client.get(path).status_code == 200, path
        for path in ("/docs/playground.json", "/openapi.json", "/docs/nothing.js"):
            assert server.client.get(path).status_code == 401, path
        auth = {"Authorization": "Bearer sekrit"}
        assert server.client.get("/docs/playground.json", headers=auth).status_code == 200
