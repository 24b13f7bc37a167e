"""Inputs of `cogserve predict | run | train`: read, coerced and checked as `cog` does it.

`cog predict` refuses bad inputs before it starts the model, with its own messages
(`unknown input "x"; valid inputs are: ...`, `missing required input "x"`,
`invalid input "n": number must be at least 1`, `... must not be null ...`), which differ
from the HTTP server's 422 texts. Scripts and users match on these, so this module
words them exactly as `cog`'s CLI (pkg/predict/input_validation.go over kin-openapi).
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
from typing import Any

from cogserve.validation import resolve


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


def coerce_inputs(pairs: list[str], component: dict[str, Any],
                  components: dict[str, Any]) -> dict[str, Any]:
    """Turn `-i name=value` pairs into typed JSON using the Input schema.

    The schema decides: `-i n=5` is an int for an int input and a string for a str input,
    and a repeated `-i` builds a list for an array input, as `cog predict` does.
    """
    properties = component.get("properties", {})
    split: list[tuple[str, str]] = []
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep:
            raise InputError(f"Failed to parse input '{pair}', expected format is 'name=value'")
        if len(raw) >= 2 and raw.startswith('"') and raw.endswith('"'):
            raw = raw[1:-1]
        split.append((name, raw))
    check_names({name for name, _ in split}, component)
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
    kind = prop.get("type")
    if kind is None and "anyOf" in prop:
        return _coerce_union(raw, [resolve(m, components) for m in prop["anyOf"]])
    try:
        if kind == "integer":
            return int(raw)
        if kind == "number":
            number = float(raw)
            return int(number) if raw.lstrip("+-").isdigit() else number
        if kind == "boolean":
            lowered = raw.lower()
            if lowered in ("true", "1", "yes"):
                return True
            if lowered in ("false", "0", "no"):
                return False
            raise ValueError(raw)
    except ValueError:
        raise InputError(f'input "{name}": {raw!r} is not a valid {kind}') from None
    if kind == "string":
        return raw
    try:  # objects and opaque values are JSON; a bare word stays a string
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _coerce_union(raw: str, members: list[dict[str, Any]]) -> Any:
    """A union takes the first member the text parses as: `-i x=1` is 1 for int | float."""
    kinds = [m.get("type") for m in members]
    for kind in ("integer", "number", "boolean"):
        if kind not in kinds:
            continue
        try:
            if kind == "integer":
                return int(raw)
            if kind == "number":
                return float(raw)
            if raw.lower() in ("true", "false"):
                return raw.lower() == "true"
        except ValueError:
            continue
    if "string" in kinds:
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


# ---------------------------------------------------------------- checking

def check_names(names: set[str] | dict[str, Any], component: dict[str, Any]) -> None:
    """`unknown input "x"; valid inputs are: a, b` (all unknown names at once)."""
    properties = component.get("properties", {})
    unknown = sorted(name for name in names if name not in properties)
    if not unknown:
        return
    valid = sorted(properties)
    suffix = f"valid inputs are: {', '.join(valid)}" if valid else "model does not accept inputs"
    if len(unknown) == 1:
        raise InputError(f"unknown input {_quote(unknown[0])}; {suffix}")
    raise InputError(f"unknown inputs {', '.join(map(_quote, unknown))}; {suffix}")


def check_inputs(inputs: dict[str, Any], component: dict[str, Any],
                 components: dict[str, Any]) -> None:
    """Raise InputError worded as `cog` words it, or return for valid inputs."""
    check_names(inputs, component)
    properties = component.get("properties", {})
    for name in sorted(inputs):
        problem = _null_problem(inputs[name], resolve(properties[name], components), components)
        if problem is not None:
            raise InputError(f"invalid input {_quote(name)}: must not be null (omit the input "
                             "to use its default)")
    messages: list[str] = []
    for name in sorted(inputs):
        message = _value_problem(inputs[name], properties[name], components, [name])
        if message is not None:
            messages.append(message)
    for name in component.get("required", []):
        if name not in inputs:
            messages.append(f"missing required input {_quote(name)}")
    if len(messages) == 1:
        raise InputError(messages[0])
    if messages:
        raise InputError("input validation failed:\n- " + "\n- ".join(messages))


def _null_problem(value: Any, prop: dict[str, Any], components: dict[str, Any]) -> bool | None:
    """True if `value` is null where strict JSON Schema (nullable ignored) refuses it."""
    if value is not None:
        return None
    return None if _allows_null(prop, components) else True


def _allows_null(prop: dict[str, Any], components: dict[str, Any]) -> bool:
    prop = resolve(prop, components)
    allowed = True
    if "type" in prop:
        allowed = prop["type"] == "null"
    if "enum" in prop:
        allowed = allowed and None in prop["enum"]
    if "anyOf" in prop:
        allowed = allowed and any(_allows_null(m, components) for m in prop["anyOf"])
    return allowed


_JSON_TYPE = {bool: "boolean", int: "number", float: "number", str: "string", list: "array",
              dict: "object", type(None): "null"}
_TYPE_OK = {
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
    "number": lambda v: type(v) in (int, float),
    "boolean": lambda v: type(v) is bool,
    "array": lambda v: type(v) is list,
    "object": lambda v: type(v) is dict,
    "null": lambda v: v is None,
}


def _value_problem(value: Any, prop: dict[str, Any], components: dict[str, Any],
                   path: list[str]) -> str | None:
    """The first rule `value` breaks, as `invalid input "PATH": REASON`, or None."""
    prop = resolve(prop, components)
    where = _quote(".".join(path))
    if "anyOf" in prop:
        if all(_value_problem(value, m, components, path) is not None for m in prop["anyOf"]):
            return f"invalid input {where}: value doesn't match any schema from \"anyOf\""
    kind = prop.get("type")
    if kind is not None and not _TYPE_OK[kind](value):
        return f"invalid input {where}: expected {kind}, got {_JSON_TYPE.get(type(value), 'value')}"
    if "enum" in prop and not any(type(value) is type(v) and value == v for v in prop["enum"]):
        shown = ", ".join(_go_value(v) for v in prop["enum"])
        return f"invalid input {where}: must be one of: {shown}"
    reason = _bound_problem(value, prop)
    if reason is not None:
        return f"invalid input {where}: {reason}"
    if kind == "array" and isinstance(prop.get("items"), dict):
        for index, item in enumerate(value):
            message = _value_problem(item, prop["items"], components, [*path, str(index)])
            if message is not None:
                return message
    return None


def _bound_problem(value: Any, prop: dict[str, Any]) -> str | None:
    """kin-openapi's wording for the bounds Cog's Input() sets."""
    if type(value) in (int, float):
        if "minimum" in prop and value < prop["minimum"]:
            return f"number must be at least {go_float(prop['minimum'])}"
        if "maximum" in prop and value > prop["maximum"]:
            return f"number must be at most {go_float(prop['maximum'])}"
        if "exclusiveMinimum" in prop and value <= prop["exclusiveMinimum"]:
            return f"number must be more than {go_float(prop['exclusiveMinimum'])}"
        if "exclusiveMaximum" in prop and value >= prop["exclusiveMaximum"]:
            return f"number must be less than {go_float(prop['exclusiveMaximum'])}"
    if type(value) is str:
        if "minLength" in prop and len(value) < prop["minLength"]:
            return f"minimum string length is {prop['minLength']}"
        if "maxLength" in prop and len(value) > prop["maxLength"]:
            return f"maximum string length is {prop['maxLength']}"
        if "pattern" in prop and not re.search(prop["pattern"], value):
            return f"string doesn't match the regular expression {_quote(prop['pattern'])}"
    if type(value) is list:
        if "minItems" in prop and len(value) < prop["minItems"]:
            return f"minimum number of items is {prop['minItems']}"
        if "maxItems" in prop and len(value) > prop["maxItems"]:
            return f"maximum number of items is {prop['maxItems']}"
    return None


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
