"""Types and defaults of Cog 0.23, through the real server: `= Input(default=None)` as Cog's
schema reads it, TypedDict and Opaque inputs and outputs, unions that keep a JSON
integer, `accept`, and `default_factory` (cogserve's own).

What the reference (Cog 0.23.1 + coglet 0.23.1, `python -m cog.server.http`, given the
schema `cogserve schema` writes for the same model) answered, 2026-11-24:
- without `seed` (`seed: int = Input(default=None)`): 422
  `{"detail":[{"loc":["body","input","seed"],"msg":"Field required","type":"value_error.missing"}]}`
- `{"value": 3}` for `value: str | float | None`: the model got `int` 3; `1.5`: `float`;
  omitted: None; `null`: 422 `null is not valid under any of the schemas listed in the
  'anyOf' keyword`
- `{"blob": "str"}` for `Annotated[dict, Opaque]`: 422 `"str" is not of type "object"`;
  an object reaches the model as a dict; a TypedDict input too; a TypedDict output is
  the object returned
- `key: Secret = Input(default=None)` omitted: the model got None
"""

from __future__ import annotations

import base64

import pytest
from cli_harness import cogserve
from harness import Server, write_model

MODEL = '''
from typing import Annotated, NotRequired, TypedDict

from cog import BaseRunner, Input, Opaque, Path, Secret


class Payload(TypedDict):
    name: str
    count: int


class Result(TypedDict):
    summary: str
    items: NotRequired[list[str]]
    blob: Annotated[object, Opaque]


class Runner(BaseRunner):
    def run(
        self,
        seed: int = Input(description="Random seed", default=None),
        key: Secret = Input(default=None),
        value: str | float | None = Input(default=None),
        data: Payload | None = None,
        blob: Annotated[dict, Opaque] = Input(default={"kept": True}),
        image: Path | None = Input(default=None, accept="image/*"),
        tags: list[str] = Input(default_factory=list),
    ) -> Result:
        tags.append("seen")  # a shared default would grow from one prediction to the next
        return {
            "summary": (f"seed={seed} key={key!r} value={type(value).__name__}:{value} "
                        f"data={data} tags={tags}"
                        + (f" image={image.read_bytes().decode()}" if image else "")),
            "blob": blob,
        }
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = write_model(tmp_path_factory.mktemp("cog-types"), MODEL)
    with Server(folder) as running:
        yield running


def summary(server: Server, **inputs: object) -> str:
    body = server.predict(**inputs).json()
    assert body["status"] == "succeeded", body
    return body["output"]["summary"]


def test_input_default_none_on_an_int_is_required(server):
    r = server.predict()
    assert r.status_code == 422
    assert r.json() == {"detail": [{"loc": ["body", "input", "seed"], "msg": "Field required",
                                    "type": "value_error.missing"}]}


def test_a_secret_with_default_none_is_optional(server):
    assert summary(server, seed=1).startswith("seed=1 key=None ")
    assert "key=Secret(**********) " in summary(server, seed=1, key="sk-1")


@pytest.mark.parametrize("value,seen", [(3, "int:3"), (1.5, "float:1.5"), ("x", "str:x")])
def test_a_union_passes_the_json_value_through(server, value, seen):
    assert f" value={seen} " in summary(server, seed=1, value=value)


def test_a_union_omitted_is_none_and_null_is_refused(server):
    assert " value=NoneType:None " in summary(server, seed=1)
    r = server.predict(seed=1, value=None)
    assert r.status_code == 422
    assert r.json()["detail"][0]["msg"] == ("null is not valid under any of the schemas "
                                            "listed in the 'anyOf' keyword")


def test_typeddict_input_and_output(server):
    body = server.predict(seed=1, data={"name": "alice", "count": 2}).json()
    assert body["status"] == "succeeded", body
    assert "data={'name': 'alice', 'count': 2}" in body["output"]["summary"]
    assert "items" not in body["output"]  # NotRequired: may be left out
    assert body["output"]["blob"] == {"kept": True}


def test_opaque_takes_objects_only_and_passes_them_through(server):
    body = server.predict(seed=1, blob={"any": ["shape", 1]}).json()
    assert body["output"]["blob"] == {"any": ["shape", 1]}
    r = server.predict(seed=1, blob="str")
    assert r.status_code == 422
    assert r.json()["detail"][0]["msg"] == '"str" is not of type "object"'


def test_default_factory_gives_each_prediction_its_own_value(server):
    assert summary(server, seed=1).endswith("tags=['seen']")
    assert summary(server, seed=2).endswith("tags=['seen']")
    assert summary(server, seed=3, tags=["a"]).endswith("tags=['a', 'seen']")


def test_an_accept_input_takes_a_file(server):
    url = "data:image/png;base64," + base64.b64encode(b"png bytes").decode()
    assert summary(server, seed=1, image=url).endswith(" image=png bytes")
    schema = server.client.get("/openapi.json").json()["components"]["schemas"]["Input"]
    assert schema["properties"]["image"]["x-cog-accept"] == "image/*"


def test_the_cli_keeps_an_integer_for_a_union(server, tmp_path):
    """Script union_input_cli: `-i value=1` for `str | float` is the integer 1."""
    result = cogserve("predict", server.directory, "-i", "seed=1", "-i", "value=1",
                      cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert " value=int:1 " in result.stdout
    words = cogserve("predict", server.directory, "-i", "seed=1", "-i", "value=hello",
                     cwd=tmp_path)
    assert " value=str:hello " in words.stdout
