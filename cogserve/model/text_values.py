"""An input given as text, made the JSON value its schema asks for.

Two front ends receive inputs as text rather than JSON: `cogserve predict -i name=value`
and a `multipart/form-data` create request (`http/form_document.py`). Both follow the
rules of `cog predict`'s `-i` (pkg/predict/input.go), so `-i steps=20` and
`-F steps=20` give the same value: the schema decides whether "20" is an integer or a
string, a repeated name builds a list for an array input, and an object input takes JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any

from cogserve.model.validation import Errors, InputValidator, compile_property, resolve

_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def item_schema(validator: InputValidator, name: str) -> tuple[dict[str, Any], bool]:
    """The schema one text value of input `name` is read by (an array's items), and
    whether the input is an array (its values are gathered into a list). `name` must be
    one of the validator's inputs."""
    components = validator.components
    prop = resolve(validator.properties[name], components)
    if prop.get("type") == "array":
        return resolve(prop.get("items", {}), components), True
    return prop, False


def is_file(prop: dict[str, Any]) -> bool:
    """Whether a (resolved) item schema is a file: `Path`/`File` inputs are URIs."""
    return prop.get("format") == "uri"


def typed(name: str, raw: str, prop: dict[str, Any], components: dict[str, Any]) -> Any:
    """`raw` as the value input `name`'s item schema `prop` asks for: an object input's
    JSON (a bare word stays a string), else the first of boolean, integer, number that the
    schema (or a member of its union) accepts and the text parses as, else the text
    itself, so `count=lots` stays a string and the check then says `expected integer,
    got string`. Where the schema also takes a string, a parsed value is used only if it
    passes the input's checks (`v=1` for `str | int` is 1)."""
    if prop.get("type") == "object":
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    kinds = _accepted_types(prop, components)
    candidates: list[Any] = []
    if raw in ("true", "false") and "boolean" in kinds:
        candidates.append(raw == "true")
    if kinds & {"integer", "number"} and _INTEGER.fullmatch(raw):
        candidates.append(int(raw))
    if "number" in kinds and _NUMBER.fullmatch(raw):
        candidates.append(float(raw))
    if "string" not in kinds:
        return candidates[0] if candidates else raw
    check = compile_property(name, prop, components)
    for value in candidates:
        errors: Errors = []
        check(value, errors)
        if not errors:
            return value
    return raw


def _accepted_types(prop: dict[str, Any], components: dict[str, Any]) -> set[str]:
    """The JSON types a schema accepts, its union's members' included."""
    prop = resolve(prop, components)
    kinds = {prop["type"]} if "type" in prop else set()
    for member in prop.get("anyOf", ()):
        kinds |= _accepted_types(member, components)
    return kinds
