"""Input verdicts worded as `cog predict` words them, for every caller that speaks `cog`'s CLI.

`cog predict` refuses bad inputs before it starts the model, with its own messages, which
differ from the HTTP server's 422 texts; `cogserve predict` and the MCP tools say them the
same way. The checks are the server's own `InputValidator`'s (one set of checks), reworded.
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Iterable
from typing import Any

from cogserve.model.validation import ErrorKind, Errors, FieldError, InputValidator, Rule


class InputError(Exception):
    """A command line whose inputs cannot be sent to the model; the message says why."""



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
