"""Validate a request's `input` against the `Input` schema, in the parent, without the model.

The schema is compiled once into a tree of small closures, so checking a request is a
handful of Python calls per field rather than a walk over the schema dictionary.
Messages follow the JSON Schema wording the reference server uses
(`5 is not of type "string"`), and every failing field is reported at once.
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import Any

import orjson


class ErrorKind(StrEnum):
    """What is wrong with a field, so front ends and the CLI need not read the message."""

    MISSING = "missing"  # a required input is absent
    UNEXPECTED = "unexpected"  # the model has no input of that name
    INVALID = "invalid"  # the value breaks the input's type or constraints


class Rule(StrEnum):
    """The schema keyword an invalid value breaks (`None` on an error means no keyword).

    With the value and the keyword's limit on the error, a front end words the failure its
    own way: the HTTP routes send `message` (JSON Schema's wording, as the reference
    server), `cogserve predict` rewords it as `cog predict` does (`model/verdicts.py`).
    """

    TYPE = "type"  # limit: the JSON type expected
    INT_RANGE = "int_range"  # an integer past 64 bits (JSON parsing made it inexact)
    ANY_OF = "anyOf"
    ENUM = "enum"  # limit: the allowed values
    MINIMUM = "minimum"
    MAXIMUM = "maximum"
    MIN_LENGTH = "minLength"
    MAX_LENGTH = "maxLength"
    MIN_ITEMS = "minItems"
    MAX_ITEMS = "maxItems"
    PATTERN = "pattern"  # limit: the regular expression
    FORMAT = "format"  # a file input that is not an http(s) or well-formed data: URL


class FieldError(tuple[str, str]):
    """One failing field: the (field, message) pair the reference lists, and its kind.

    A pair, so callers read it as `for field, message in errors`; `kind` rides along, and
    for an input's value the `rule` it breaks, the `value` and the rule's `limit`.
    `field` is `name/index` for an array's item (`words/2`), "" for the input as a whole.
    """

    kind: ErrorKind
    rule: Rule | None
    value: Any
    limit: Any

    def __new__(cls, field: str, message: str, kind: ErrorKind = ErrorKind.INVALID, *,
                rule: Rule | None = None, value: Any = None, limit: Any = None) -> FieldError:
        self = super().__new__(cls, (field, message))
        self.kind = kind
        self.rule = rule
        self.value = value
        self.limit = limit
        return self

    @property
    def field(self) -> str:
        return self[0]

    @property
    def message(self) -> str:
        return self[1]

    def at(self, field: str) -> FieldError:
        """The same error placed at another field (an array's item: `words` → `words/2`)."""
        return FieldError(field, self.message, self.kind, rule=self.rule, value=self.value,
                          limit=self.limit)


Errors = list[FieldError]
Check = Callable[[Any, Errors], None]

_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: type(v) is str,
    # JSON Schema semantics, as the reference: 2.0 is an integer (the worker makes it 2).
    "integer": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
    "number": lambda v: type(v) is int or type(v) is float,
    "boolean": lambda v: type(v) is bool,
    "array": lambda v: type(v) is list,
    "object": lambda v: type(v) is dict,
}


# The JSON parser turns an integer beyond 64 bits into the nearest float, so such a value
# reaches an `int` field as a float that is no longer the number the client sent.
_INT_RANGE_F = (-float(1 << 63), float(1 << 64))


def show(value: Any) -> str:
    """Render a value as the JSON it came in as, shortened for long strings.

    A value orjson cannot write (nested deeper than its limit) is shown with reprlib,
    which stops at a few levels: plain repr() of 100,000 nested lists would recurse
    until RecursionError and turn a 422 into a 500.
    """
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = reprlib.repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def resolve(prop: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """Inline `allOf: [{$ref}]` (how Cog writes enum inputs) into one flat schema."""
    if "allOf" not in prop and "$ref" not in prop:
        return prop
    merged = {k: v for k, v in prop.items() if k not in ("allOf", "$ref")}
    refs = prop.get("allOf", []) + ([{"$ref": prop["$ref"]}] if "$ref" in prop else [])
    for ref in refs:
        target = ref.get("$ref", "")
        sub = components.get(target.rsplit("/", 1)[-1], {}) if target else ref
        for k, v in resolve(sub, components).items():
            if k not in ("title", "description"):
                merged.setdefault(k, v)
    return merged


def compile_property(name: str, prop: dict[str, Any], components: dict[str, Any]) -> Check:
    """A check for one value; it appends (field, message) pairs to `errors`."""
    prop = resolve(prop, components)
    if "x-cogserve-tensor" in prop:
        return _tensor_check(name)
    # (keyword, check): run in the keywords' byte order, which is the order the reference
    # (the jsonschema crate over a sorted map) reports one value's errors in
    checks: list[tuple[str, Check]] = []

    if "anyOf" in prop:
        members = [compile_property(name, m, components) for m in prop["anyOf"]]

        def any_of(value: Any, errors: Errors) -> None:
            for member in members:
                trial: Errors = []
                member(value, trial)
                if not trial:
                    return
            errors.append(FieldError(name, f"{show(value)} is not valid under any of the "
                                     "schemas listed in the 'anyOf' keyword",
                                     rule=Rule.ANY_OF, value=value))

        checks.append(("anyOf", any_of))

    jtype = prop.get("type")
    if jtype is not None:
        test = _TYPE_TESTS[jtype]
        message_type = f'is not of type "{jtype}"'

        def type_check(value: Any, errors: Errors) -> bool:
            if test(value):
                if jtype == "integer" and type(value) is float and not _INT_RANGE_F[0] <= \
                        value < _INT_RANGE_F[1]:
                    errors.append(FieldError(
                        name, f"{show(value)} is outside the 64-bit integer range (larger "
                              "integers lose their exact value in JSON parsing)",
                        rule=Rule.INT_RANGE, value=value))
                    return False
                return True
            errors.append(FieldError(name, f"{show(value)} {message_type}", rule=Rule.TYPE,
                                     value=value, limit=jtype))
            return False
    else:
        type_check = None  # type: ignore[assignment]

    if "enum" in prop:
        allowed = list(prop["enum"])
        allowed_set = {(type(v), v) for v in allowed}
        shown = ",".join(show(v) for v in allowed)

        def enum_check(value: Any, errors: Errors) -> None:
            # it also meets values of the wrong type: an object or array is never a choice
            if isinstance(value, dict | list) or (type(value), value) not in allowed_set:
                errors.append(FieldError(name, f"{show(value)} is not one of [{shown}]",
                                         rule=Rule.ENUM, value=value, limit=allowed))

        checks.append(("enum", enum_check))
    if "minimum" in prop:
        lo = prop["minimum"]

        def min_check(value: Any, errors: Errors) -> None:
            if value < lo:
                errors.append(FieldError(
                    name, f"{show(value)} is less than the minimum of {show(lo)}",
                    rule=Rule.MINIMUM, value=value, limit=lo))

        checks.append(("minimum", min_check))
    if "maximum" in prop:
        hi = prop["maximum"]

        def max_check(value: Any, errors: Errors) -> None:
            if value > hi:
                errors.append(FieldError(
                    name, f"{show(value)} is greater than the maximum of {show(hi)}",
                    rule=Rule.MAXIMUM, value=value, limit=hi))

        checks.append(("maximum", max_check))
    for key, word, cmp in (
        ("minLength", "is shorter than {} character", lambda n, lim: n < lim),
        ("maxLength", "is longer than {} character", lambda n, lim: n > lim),
        ("minItems", "has less than {} item", lambda n, lim: n < lim),
        ("maxItems", "has more than {} item", lambda n, lim: n > lim),
    ):
        if key in prop:
            checks.append((key, _length_check(name, prop[key], word, cmp, Rule(key))))
    if "pattern" in prop:
        pattern = re.compile(prop["pattern"])
        raw = prop["pattern"]

        def pattern_check(value: Any, errors: Errors) -> None:
            if not pattern.search(value):
                errors.append(FieldError(name, f"{show(value)} does not match {show(raw)}",
                                         rule=Rule.PATTERN, value=value, limit=raw))

        checks.append(("pattern", pattern_check))
    if jtype == "array" and prop.get("items"):
        item_check = compile_property(name, prop["items"], components)

        def items_check(value: Any, errors: Errors) -> None:
            for index, item in enumerate(value):
                before = len(errors)
                item_check(item, errors)
                for i in range(before, len(errors)):
                    # the reference's location of an item: `words/1`, one string
                    errors[i] = errors[i].at(f"{name}/{index}")

        checks.append(("items", items_check))
    if jtype == "string" and prop.get("format") == "uri":
        checks.append(("format", _uri_check(name)))
    checks.sort(key=lambda keyword_check: keyword_check[0])
    ordered = [check for _, check in checks]

    if type_check is None:
        if not ordered:
            return _accept
        if len(ordered) == 1:
            return ordered[0]

        def all_checks(value: Any, errors: Errors) -> None:
            for check in ordered:
                check(value, errors)

        return all_checks

    if not ordered:
        return type_check  # type: ignore[return-value]
    # a value of the wrong type still meets the keywords that apply to any type
    # ("type" sorts after them all, so its error comes last, as the reference's does)
    any_type = [check for keyword, check in checks if keyword in _ANY_TYPE_KEYWORDS]

    def typed(value: Any, errors: Errors) -> None:
        if type_check(value, errors):
            for check in ordered:
                check(value, errors)
            return
        if any_type:
            type_error = errors.pop()
            for check in any_type:
                check(value, errors)
            errors.append(type_error)

    return typed


_ANY_TYPE_KEYWORDS = frozenset({"anyOf", "enum"})


def _accept(value: Any, errors: Errors) -> None:
    return None


def _tensor_check(name: str) -> Check:
    """A tensor input is nested JSON lists (the V2 routes validate with a stand-in list).

    Elements are not walked here: a million-element tensor would cost more to check in
    Python than to run; the worker builds the array and reports a mismatch by name.
    The V2 routes' packed form is never accepted from a client, so nobody can point
    the worker at a file of their choosing.
    """

    def check(value: Any, errors: Errors) -> None:
        if type(value) is list:
            return
        errors.append(FieldError(name, f"{show(value)} is not of type \"array\"",
                                 rule=Rule.TYPE, value=value, limit="array"))

    return check


def _length_check(name: str, limit: int, word: str, cmp: Callable[[int, int], bool],
                  rule: Rule) -> Check:
    plural = "" if limit == 1 else "s"  # the reference's wording: "1 character", "2 items"

    def check(value: Any, errors: Errors) -> None:
        if cmp(len(value), limit):
            errors.append(FieldError(name, f"{show(value)} {word.format(limit)}{plural}",
                                     rule=rule, value=value, limit=limit))

    return check


_URL_SCHEMES = ("http://", "https://", "data:")


def _uri_check(name: str) -> Check:
    def check(value: str, errors: Errors) -> None:
        if not value.startswith(_URL_SCHEMES) and not _bucket_url(value):
            errors.append(FieldError(
                name, f"{show(value)} is not a URL: file inputs must be http://, https:// or "
                       "data: URLs", rule=Rule.FORMAT, value=value))
        elif value.startswith("data:"):
            problem = _data_url_problem(value)
            if problem:
                errors.append(FieldError(name, f"malformed data URL: {problem}",
                                         rule=Rule.FORMAT, value=value))

    return check


def _bucket_url(value: str) -> bool:
    """An s3:// or gs:// URL, with the s3 extra installed (`buckets`, imported here, off
    the path of http and data: URLs)."""
    from cogserve import buckets

    return buckets.accepts(value)


def _data_url_problem(value: str) -> str | None:
    """What the worker's decoder would refuse, found before a slot is taken."""
    header, comma, payload = value[5:].partition(",")
    if not comma:
        return "no comma between the media type and the data"
    if "base64" in header.split(";")[1:] and not _is_base64(payload):
        return "the data is not valid base64"
    return None


def _is_base64(payload: str) -> bool:
    """Strict base64, decoded as the worker decodes it (pybase64: it can be MiBs)."""
    import pybase64

    try:
        pybase64.b64decode(payload, validate=True)
    except ValueError:  # binascii.Error is one, as is a str that is not ASCII
        return False
    return True


class InputValidator:
    """Checks a request's `input` object against the `Input` component of a schema."""

    def __init__(self, schema: dict[str, Any], component: str = "Input") -> None:
        components = schema["components"]["schemas"]
        spec = components[component]
        self.components: dict[str, Any] = components  # what its `$ref`s name
        self.properties: dict[str, dict[str, Any]] = spec.get("properties", {})
        self.required: list[str] = list(spec.get("required", []))
        self._checks = {
            name: compile_property(name, prop, components)
            for name, prop in self.properties.items()
        }
        self.secret_fields = frozenset(
            name for name, prop in self.properties.items() if _is_secret(prop, components)
        )
        self.file_fields = frozenset(
            name for name, prop in self.properties.items() if _is_file(prop, components)
        )
        self.defaults = {
            name: prop["default"] for name, prop in self.properties.items() if "default" in prop
        }

    def validate(self, value: Any) -> Errors:
        """Every problem with `value`, as (field, message); empty when it is valid."""
        if type(value) is not dict:
            return [FieldError("", f"{show(value)} is not of type \"object\"", rule=Rule.TYPE,
                               value=value, limit="object")]
        errors: Errors = []
        checks = self._checks
        for key, item in value.items():
            check = checks.get(key)
            if check is None:
                errors.append(_unexpected(key))
            else:
                check(item, errors)
        if len(errors) > 1:  # the reference's order: by field, then missing ones
            errors.sort(key=lambda e: e[0])
        for key in self.required:
            if key not in value:
                errors.append(FieldError(key, "Field required", ErrorKind.MISSING))
        return errors

    def unexpected(self, names: Iterable[str]) -> Errors:
        """The names the model has no input for, as `validate` reports them: the CLI asks
        before it reads any `@file` a `--json` names."""
        return [_unexpected(name) for name in names if name not in self._checks]

    def redact(self, value: dict[str, Any]) -> dict[str, Any]:
        """A copy of `value` fit to echo back: Secret inputs masked, long data: URLs cut.

        A data: URL is the file itself: echoing it made a 280 MB request a 280 MB
        response (and as much again in the store of finished predictions). Beyond
        ECHO_DATA_URL_MAX characters only its media type and size are echoed.
        """
        cut = self.file_fields and any(_long_data_url(value.get(k)) for k in self.file_fields)
        if not cut and (not self.secret_fields or not self.secret_fields.intersection(value)):
            return value
        return {k: (_mask(v) if k in self.secret_fields else _shorten(v) if cut else v)
                for k, v in value.items()}


def _unexpected(name: str) -> FieldError:
    return FieldError(name, f"Additional properties are not allowed ({name!r} was unexpected)",
                      ErrorKind.UNEXPECTED)


ECHO_DATA_URL_MAX = 1024  # characters of a data: URL input echoed back whole


def _long_data_url(value: Any) -> bool:
    if type(value) is list:
        return any(_long_data_url(v) for v in value)
    return type(value) is str and len(value) > ECHO_DATA_URL_MAX and value.startswith("data:")


def _shorten(value: Any) -> Any:
    """`data:image/png;base64,<N characters omitted>` for a long data: URL."""
    if type(value) is list:
        return [_shorten(v) for v in value]
    if not _long_data_url(value):
        return value
    head, _, payload = value.partition(",")
    return f"{head[:200]},<{len(payload)} characters omitted>"


def _is_file(prop: dict[str, Any], components: dict[str, Any]) -> bool:
    prop = resolve(prop, components)
    items = prop.get("items")
    return prop.get("format") == "uri" or (isinstance(items, dict)
                                           and items.get("format") == "uri")


def _mask(value: Any) -> Any:
    """Each secret becomes stars; a list of secrets keeps its length, None stays None."""
    if isinstance(value, list):
        return ["**********" if v is not None else None for v in value]
    return "**********" if value is not None else None


def _is_secret(prop: dict[str, Any], components: dict[str, Any]) -> bool:
    prop = resolve(prop, components)
    if prop.get("x-cog-secret"):
        return True
    items = prop.get("items")
    return isinstance(items, dict) and bool(items.get("x-cog-secret"))
