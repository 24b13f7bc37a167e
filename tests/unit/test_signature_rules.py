"""Reading a run() signature by Cog's static schema rules, in process: what each
declaration becomes (default, required, nullable, kind), before any schema is written."""

from __future__ import annotations

import dataclasses
from typing import Annotated, NotRequired, TypedDict

import pytest

from cogserve.cog import BaseModel, Input, Opaque, Path, Secret
from cogserve.exceptions import DefinitionError
from cogserve.model.signature import read_signature
from cogserve.model.specs import TypeKind
from cogserve.sdk.runner import MISSING


class Payload(TypedDict):
    name: str
    count: NotRequired[int]


def run(
    seed: int = Input(default=None),
    plain: str = None,  # type: ignore[assignment]
    key: Secret = Input(default=None),
    bare_key: Secret = Input(),
    maybe: int | None = None,
    no_default: int | None = Input(description="x"),
    union: str | float | None = Input(default=None),
    union_no_default: str | float | None = Input(description="x"),
    data: Payload = Input(),
    blob: Annotated[object, Opaque] = Input(),
    blobs: Annotated[list[object], Opaque] = Input(),
    tags: list[str] = Input(default_factory=lambda: ["t"]),
    image: Path = Input(accept="image/*"),
    old_style: str = Input(..., description="pydantic's required"),
) -> Payload:
    return {"name": ""}


@pytest.fixture(scope="module")
def inputs():
    return {spec.name: spec for spec in read_signature(run).inputs}


@pytest.mark.parametrize("name,default,required,nullable", [
    ("seed", MISSING, True, False),  # None on a type without None: no default
    ("plain", MISSING, True, False),
    ("key", None, False, True),  # ...except on a Secret
    ("bare_key", MISSING, True, False),
    ("maybe", None, False, True),
    ("no_default", MISSING, False, True),
    ("union", None, False, True),
    ("union_no_default", MISSING, True, True),  # a union without a default is required
    ("old_style", MISSING, True, False),
])
def test_defaults_required_and_nullable(inputs, name, default, required, nullable):
    spec = inputs[name]
    assert (spec.default, spec.required, spec.type.optional) == (default, required, nullable)


def test_typeddict_and_opaque_kinds(inputs):
    assert inputs["data"].type.kind == TypeKind.ANY
    assert inputs["blob"].type.kind == TypeKind.ANY
    blobs = inputs["blobs"].type
    assert blobs.kind == TypeKind.LIST and blobs.item is not None
    assert blobs.item.kind == TypeKind.ANY
    output = read_signature(run).output.type
    assert output.kind == TypeKind.OBJECT
    assert [(name, required) for name, _, required in output.fields] == [
        ("name", True), ("count", False)]


def test_default_factory_is_called_for_the_published_default(inputs):
    spec = inputs["tags"]
    assert spec.default == ["t"] and spec.factory is not None
    assert spec.factory() is not spec.factory()  # a new list each time
    assert inputs["image"].info.accept == "image/*"


def test_accept_on_a_str_is_a_definition_error():
    def bad(name: str = Input(accept="text/plain")) -> str:
        return name

    with pytest.raises(DefinitionError, match='parameter "name": accept is only valid on '
                                              "Path or File inputs, not str"):
        read_signature(bad)


def test_a_basemodel_written_by_pydantic_rules_becomes_a_valid_dataclass(capsys):
    class Output(BaseModel):
        text: str
        note: str | None
        score: float = 0.5
        words: int

    assert Output(text="a", words=2) == Output("a", None, 0.5, words=2)
    fields = {f.name: f for f in dataclasses.fields(Output)}
    assert fields["words"].kw_only and not fields["text"].kw_only
    assert "cog: Output(note, words) follows pydantic's BaseModel rules" in capsys.readouterr().err

    class Strict(BaseModel):
        a: str
        b: int = 1

    assert Strict("x") == Strict(a="x", b=1)  # the dataclass rules: left as it is
    assert "Strict" not in capsys.readouterr().err
