"""Hostile HTTP against one shared server: odd keys, huge and numerous headers, lying
Content-Length, slow clients. Every answer is a clear 4xx, never a 500, and the server
keeps serving a normal client throughout."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from harness import MODELS, Server

HELLO = MODELS.parent.parent / "examples" / "hello-world"


@pytest.fixture(scope="module")
def hello() -> Iterator[Server]:
    with Server(HELLO) as server:
        yield server


@pytest.mark.parametrize("key", ["¹", "٣", "99999999999999999999", "a.0", "0"])
@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_unknown_input_keys_get_422_naming_the_key(hello, key, method):
    path = "/predictions" if method == "POST" else "/predictions/odd-key"
    response = hello.client.request(method, path, json={"input": {"name": "a", key: 1}})
    assert response.status_code == 422, response.text
    [item] = response.json()["detail"]
    assert item["loc"] == ["body", "input", key]
    assert "was unexpected" in item["msg"]
