"""Validation errors carry a kind, so no caller has to read the message text."""

from __future__ import annotations

from cogserve.model.validation import ErrorKind, FieldError, InputValidator, Rule

SCHEMA = {"components": {"schemas": {"Input": {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "count": {"type": "integer", "minimum": 1},
        "words": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["text"],
}}}}


def test_each_error_has_its_kind_and_is_still_a_field_message_pair() -> None:
    errors = InputValidator(SCHEMA).validate({"count": 0, "bogus": 1, "words": ["a", 2]})
    assert [(e.field, e.kind) for e in errors] == [
        ("bogus", ErrorKind.UNEXPECTED), ("count", ErrorKind.INVALID),
        ("words/1", ErrorKind.INVALID), ("text", ErrorKind.MISSING)]
    field, message = errors[1]
    assert (field, message) == ("count", "0 is less than the minimum of 1")
    assert errors[-1] == ("text", "Field required")


def test_a_field_error_compares_as_its_pair() -> None:
    error = FieldError("x", "bad", ErrorKind.MISSING)
    assert error == ("x", "bad") and error.kind is ErrorKind.MISSING
    assert FieldError("x", "bad").kind is ErrorKind.INVALID


def test_not_an_object() -> None:
    (error,) = InputValidator(SCHEMA).validate([1])
    assert error == ("", '[1] is not of type "object"') and error.kind is ErrorKind.INVALID


def test_an_invalid_value_names_the_rule_it_breaks_with_its_limit() -> None:
    errors = InputValidator(SCHEMA).validate({"text": 5, "count": 0, "words": ["a", 2]})
    assert [(e.field, e.rule, e.value, e.limit) for e in errors] == [
        ("count", Rule.MINIMUM, 0, 1), ("text", Rule.TYPE, 5, "string"),
        ("words/1", Rule.TYPE, 2, "string")]
    assert FieldError("x", "bad").rule is None
