"""Inputs of `cogserve predict | run | train`: read, coerced and checked as `cog` does it.

`cog predict` refuses bad inputs before it starts the model, with its own messages
(`unknown input "x"; valid inputs are: ...`, `missing required input "x"`,
`invalid input "n": number must be at least 1`, `... must not be null ...`), which differ
from the HTTP server's 422 texts. Scripts and users match on these, so this module
words them exactly as `cog`'s CLI (pkg/predict/input_validation.go over kin-openapi),
rewording the errors of the server's own `InputValidator` (one set of checks).
Every failure raises `InputError`, which the CLI prints once as `error: MESSAGE`.
"""

from __future__ import annotations

import base64
import json
import mimetypes
import pathlib
import re
import sys
from typing import Any

from cogserve.model.validation import (
    Errors,
    InputValidator,
    compile_property,
    resolve,
)
from cogserve.model.verdicts import InputError, check_names

# ---------------------------------------------------------------- reading

def read_json_argument(value: str) -> dict[str, Any]:
    """`--json '{...}'`, `--json @file.json`, or `--json @-` / `--json -` (standard input)."""
    if value in ("-", "@-"):
        text = sys.stdin.read()
    elif value.startswith("@"):
        try:
            text = pathlib.Path(value[1:]).read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"Failed to read JSON from file {value[1:]!r}: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
    else:
        text = value
    try:
        inputs = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"Failed to parse JSON: {exc}") from None
    if not isinstance(inputs, dict):
        raise InputError("--json must be a JSON object of inputs")
    return inputs


def files_to_data_urls(inputs: dict[str, Any]) -> dict[str, Any]:
    """In `--json` inputs, a string `"@path"` is that file's content as a data URL."""
    result = dict(inputs)
    for key, value in inputs.items():
        if isinstance(value, str) and value.startswith("@"):
            result[key] = _data_url(key, value[1:])
    return result


def _data_url(name: str, filename: str) -> str:
    path = pathlib.Path(filename)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"input {name!r}: failed to read file {filename!r}: "
                         f"{exc.strerror or exc}") from None
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{mime};base64," + base64.b64encode(data).decode()


def coerce_inputs(pairs: list[str], validator: InputValidator,
                  components: dict[str, Any]) -> dict[str, Any]:
    """Turn `-i name=value` pairs into typed JSON using the Input schema.

    The schema decides: `-i n=5` is an int for an int input and a string for a str input,
    and a repeated `-i` builds a list for an array input, as `cog predict` does.
    """
    properties = validator.properties
    split: list[tuple[str, str]] = []
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep:
            raise InputError(f"Failed to parse input '{pair}', expected format is 'name=value'")
        if len(raw) >= 2 and raw.startswith('"') and raw.endswith('"'):
            raw = raw[1:-1]
        split.append((name, raw))
    check_names({name for name, _ in split}, validator)
    result: dict[str, Any] = {}
    for name, raw in split:
        prop = resolve(properties[name], components)
        is_list = prop.get("type") == "array"
        item = resolve(prop.get("items", {}), components) if is_list else prop
        value = _coerce(name, raw, item, components)
        if is_list:
            result.setdefault(name, []).append(value)
        else:
            result[name] = value
    return result


def _coerce(name: str, raw: str, prop: dict[str, Any], components: dict[str, Any]) -> Any:
    if raw.startswith("@"):
        if prop.get("format") == "uri":
            return _data_url(name, raw[1:])
        try:
            raw = pathlib.Path(raw[1:]).read_text()
        except (OSError, UnicodeDecodeError):
            raise InputError(f'input "{name}": no such file {raw[1:]!r}') from None
    if prop.get("type") == "object":
        try:  # objects and opaque values are JSON; a bare word stays a string
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return _scalar(name, raw, prop, components)


_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _scalar(name: str, raw: str, prop: dict[str, Any], components: dict[str, Any]) -> Any:
    """The text as the first of boolean, integer, number that the input's schema (or a
    member of its union) accepts and the text parses as, else the text itself, as `cog`
    parses `-i` (pkg/predict/input.go): `-i count=lots` stays a string, so the check then
    says `expected integer, got string`. Where the schema also takes a string, a parsed
    value is used only if it passes the input's checks (`-i v=1` for `str | int` is 1)."""
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
