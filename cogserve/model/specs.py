"""What a model's signature declares, as plain values: the types, inputs and output.

`signature` reads them from a run()/train() function; `schema` writes them out as
OpenAPI and the worker's input and output code follows them. They live here, apart
from both, so that reading a signature can use the schema (to check a default against
its own declaration) without the two importing each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from cogserve.sdk.runner import MISSING, FieldInfo


class TypeKind(StrEnum):
    """What kind of type a `TypeSpec` is. A StrEnum: the values appear in error messages
    and in schema keys exactly as the bare strings did."""

    STR = "str"
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    PATH = "path"
    FILE = "file"
    SECRET = "secret"
    ANY = "any"
    LIST = "list"
    UNION = "union"
    LITERAL = "literal"
    OBJECT = "object"
    TENSOR = "tensor"


@dataclass(frozen=True)
class TypeSpec:
    """One type in the model's signature, reduced to what serving needs to know."""

    kind: TypeKind
    item: TypeSpec | None = None  # list element
    members: tuple[TypeSpec, ...] = ()  # union members (without None)
    values: tuple[Any, ...] = ()  # literal values
    fields: tuple[tuple[str, TypeSpec, bool], ...] = ()  # object fields: (name, type, required)
    model: Any = None  # the output BaseModel class
    optional: bool = False
    # kind TENSOR: (datatype or None, shape or None); None means "whatever the client sends"
    tensor: tuple[str | None, tuple[int, ...] | None] | None = None

    def describe(self) -> str:
        if self.kind == TypeKind.LIST and self.item is not None:
            return f"list[{self.item.describe()}]"
        if self.kind == TypeKind.UNION:
            return " | ".join(m.describe() for m in self.members)
        if self.kind == TypeKind.OBJECT and self.model is not None:
            return str(self.model.__name__)
        return str(self.kind)


@dataclass
class InputSpec:
    """One input. `default` is what Cog's schema publishes (MISSING: none): `= None` on a
    type that is neither Optional nor Secret is no default (`seed: int = Input(default=None)`
    is required), and `factory` (Input(default_factory=...)) makes each prediction's."""

    name: str
    type: TypeSpec
    info: FieldInfo
    order: int
    default: Any = MISSING
    factory: Callable[[], Any] | None = None

    @property
    def required(self) -> bool:
        """Cog's rule: no default, and not Optional (a union with None is still required)."""
        return self.default is MISSING and (not self.type.optional
                                            or self.type.kind == TypeKind.UNION)


class Streamed(StrEnum):
    """How an iterator output streams (its schema's `x-cog-array-type`/`-display`): items,
    or pieces of one string (`ConcatenateIterator`)."""

    ITERATOR = "iterator"
    CONCATENATE = "concatenate"


@dataclass
class OutputSpec:
    type: TypeSpec
    iterator: Streamed | None = None  # None: run() returns the output whole


@dataclass
class Signature:
    inputs: list[InputSpec] = field(default_factory=list)
    output: OutputSpec = field(default_factory=lambda: OutputSpec(TypeSpec(TypeKind.ANY)))

    def input(self, name: str) -> InputSpec | None:
        for spec in self.inputs:
            if spec.name == name:
                return spec
        return None
