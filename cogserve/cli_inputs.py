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
import decimal
import json
import mimetypes
import pathlib
import re
import sys
from collections.abc import Iterable
from typing import Any

from cogserve.validation import (
    ErrorKind,
    Errors,
    FieldError,
    InputValidator,
    Rule,
    compile_property,
    resolve,
)


class InputError(Exception):
    """A command line whose inputs cannot be sent to the model; the message says why."""


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


# ---------------------------------------------------------------- checking

def check_names(names: Iterable[str], validator: InputValidator) -> None:
    """`unknown input "x"; valid inputs are: a, b` (all unknown names at once)."""
    _refuse(validator.unexpected(names), validator)


def check_inputs(inputs: dict[str, Any], validator: InputValidator) -> None:
    """Raise InputError worded as `cog` words it, or return for valid inputs."""
    _refuse(validator.validate(inputs), validator)


def _refuse(errors: Errors, validator: InputValidator) -> None:
    """The validator's errors as `cog predict` words them, in its order: unknown names
    alone, else the first null (alone), else each input's first problem, then the missing
    ones; one message, or a list under `input validation failed:`."""
    unknown = sorted(e.field for e in errors if e.kind is ErrorKind.UNEXPECTED)
    if unknown:
        valid = sorted(validator.properties)
        suffix = (f"valid inputs are: {', '.join(valid)}" if valid
                  else "model does not accept inputs")
        if len(unknown) == 1:
            raise InputError(f"unknown input {_quote(unknown[0])}; {suffix}")
        raise InputError(f"unknown inputs {', '.join(map(_quote, unknown))}; {suffix}")
    for e in errors:  # JSON Schema has no null for a typed input (cog ignores `nullable`)
        if e.kind is ErrorKind.INVALID and e.value is None and "/" not in e.field:
            raise InputError(f"invalid input {_quote(e.field)}: must not be null (omit the "
                             "input to use its default)")
    # a wrong type is what cog predict names first (the HTTP answer lists `enum` before it)
    mistyped = {e.field for e in errors if e.rule is Rule.TYPE}
    messages: list[str] = []
    reported: set[str] = set()
    for e in errors:
        if e.kind is ErrorKind.MISSING:
            messages.append(f"missing required input {_quote(e.field)}")
        elif e.field in mistyped and e.rule is not Rule.TYPE:
            continue
        elif (name := e.field.partition("/")[0]) not in reported:
            reported.add(name)
            # an item is `words/1` in the HTTP answer, `words.1` in cog predict's words
            messages.append(f"invalid input {_quote(e.field.replace('/', '.'))}: {_reason(e)}")
    if len(messages) == 1:
        raise InputError(messages[0])
    if messages:
        raise InputError("input validation failed:\n- " + "\n- ".join(messages))


_JSON_TYPE = {bool: "boolean", int: "number", float: "number", str: "string", list: "array",
              dict: "object", type(None): "null"}


# kin-openapi's wording of each rule; `{}` is the rule's limit as Go prints it
_WORDING = {
    Rule.ANY_OF: 'value doesn\'t match any schema from "anyOf"',
    Rule.ENUM: "must be one of: {}",
    Rule.MINIMUM: "number must be at least {}",
    Rule.MAXIMUM: "number must be at most {}",
    Rule.MIN_LENGTH: "minimum string length is {}",
    Rule.MAX_LENGTH: "maximum string length is {}",
    Rule.MIN_ITEMS: "minimum number of items is {}",
    Rule.MAX_ITEMS: "maximum number of items is {}",
    Rule.PATTERN: "string doesn't match the regular expression {}",
}


def _reason(error: FieldError) -> str:
    """The rule broken in kin-openapi's words (the validator's own for rules `cog`'s CLI
    does not check: file URLs, integers past 64 bits)."""
    rule, limit = error.rule, error.limit
    if rule is Rule.TYPE:
        return f"expected {limit}, got {_JSON_TYPE.get(type(error.value), 'value')}"
    template = _WORDING.get(rule) if rule is not None else None
    if template is None:
        return error.message
    if rule is Rule.ENUM:
        shown = ", ".join(_go_value(v) for v in limit)
    elif rule is Rule.PATTERN:
        shown = _quote(limit)
    elif rule in (Rule.MINIMUM, Rule.MAXIMUM):
        shown = go_float(limit)
    else:
        shown = str(limit)  # a length or a count: %d
    return template.format(shown)


def go_float(number: float) -> str:
    """A number as Go's `%g` prints a float64: shortest digits, e-notation when the
    decimal exponent is below -4 or at least 6 (`1e+06`, `100000`, `0.5`)."""
    value = float(number)
    if value == 0:
        return "0"
    sign, digits, exponent = decimal.Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    power = exponent + len(text) - 1
    minus = "-" if sign else ""
    if power < -4 or power >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{minus}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    return minus + format(decimal.Decimal(text).scaleb(exponent), "f")


def _go_value(value: Any) -> str:
    """`%v` of a JSON value decoded by Go: numbers as float64, strings bare."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return go_float(value)
    return str(value)


def _quote(text: str) -> str:
    """Go's `%q`: a double-quoted string with Go escapes (JSON's are the same for text)."""
    return json.dumps(text, ensure_ascii=False)
