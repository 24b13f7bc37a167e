"""Validation the parent runs from the schema alone (no model), and what the model receives.

Verdicts are checked on the validator the server builds from the `inputs` contract
model's schema; the conversions the model sees are checked through the real server.
"""

from __future__ import annotations

import pytest
from cli_harness import CONTRACT, schema_of

from cogserve.model.validation import InputValidator


@pytest.fixture(scope="module")
def validator() -> InputValidator:
    return InputValidator(schema_of("inputs"))


def verdict(validator: InputValidator, **fields) -> dict[str, str]:
    errors = validator.validate({"text": "abc", **fields})
    result: dict[str, str] = {}
    for field, msg in errors:
        result[field] = f"{result[field]} | {msg}" if field in result else msg
    return result


def test_a_valid_input_has_no_errors(validator):
    assert validator.validate({"text": "abc"}) == []
    assert verdict(validator, count=10, ratio=1, flag=True, words=["x", "y"], numbers=[0, 5],
                   extra={"a": [1]}, anything={"k": None}, maybe="m", color="blue", size=3,
                   mode="slow", image="https://example.com/a.png",
                   files=["data:,abc"], token="s", blob={"raw": [1, "two"]}) == {}


@pytest.mark.parametrize("field,value,message", [
    ("text", 5, '5 is not of type "string"'),
    ("count", "3", '"3" is not of type "integer"'),
    ("count", True, 'true is not of type "integer"'),
    ("count", 2.5, '2.5 is not of type "integer"'),
    ("ratio", "0.3", '"0.3" is not of type "number"'),
    ("flag", "true", '"true" is not of type "boolean"'),
    ("words", "notalist", '"notalist" is not of type "array"'),
    ("extra", [1], '[1] is not of type "object"'),
    ("token", 12, '12 is not of type "string"'),
    ("image", 3, '3 is not of type "string"'),
])
def test_wrong_types_name_the_field(validator, field, value, message):
    assert verdict(validator, **{field: value}) == {field: message}


@pytest.mark.parametrize("field,value,message", [
    ("count", 11, "11 is greater than the maximum of 10"),
    ("count", 0, "0 is less than the minimum of 1"),
    ("ratio", 1.5, "1.5 is greater than the maximum of 1.0"),
    ("ratio", -0.1, "-0.1 is less than the minimum of 0.0"),
    ("text", "ABC", '"ABC" does not match "^[a-z]+$"'),
    ("text", "", '"" is shorter than 1 character | "" does not match "^[a-z]+$"'),
    ("text", "abcdefghij", '"abcdefghij" is longer than 8 characters'),
    ("words", [], "[] has less than 1 item"),
    ("color", "pink", '"pink" is not one of ["red","green","blue"]'),
    ("size", 7, "7 is not one of [1,2,3]"),
    ("mode", "medium", '"medium" is not one of ["fast","slow"]'),
    ("image", "file:///etc/hostname",
     '"file:///etc/hostname" is not a URL: file inputs must be http://, https:// or data: URLs'),
])
def test_constraints_and_choices(validator, field, value, message):
    assert verdict(validator, **{field: value}) == {field: message}


def test_list_items_are_checked_one_by_one(validator):
    assert verdict(validator, numbers=[1, -1, "x"]) == {
        "numbers/1": "-1 is less than the minimum of 0",
        "numbers/2": '"x" is not of type "integer"',
    }
    assert verdict(validator, files=["https://a/b", "/etc/passwd"]) == {
        "files/1": '"/etc/passwd" is not a URL: file inputs must be http://, https:// or '
                   "data: URLs"}


def test_a_value_of_the_wrong_type_also_meets_enum_first(validator):
    # as the reference: `enum` applies to a value of any type, and sorts before `type`
    assert verdict(validator, size="1") == {
        "size": '"1" is not one of [1,2,3] | "1" is not of type "integer"'}
    # an object or array is no choice either (and cannot be looked up in the set: a 500)
    assert verdict(validator, mode={}) == {
        "mode": '{} is not one of ["fast","slow"] | {} is not of type "string"'}
    assert verdict(validator, size=[1]) == {
        "size": '[1] is not one of [1,2,3] | [1] is not of type "integer"'}


def test_unions_accept_any_member_and_name_the_field_otherwise(validator):
    for value in (True, 1, 1.5):
        assert verdict(validator, mixed=value) == {}
    assert verdict(validator, either="a") == {}
    assert verdict(validator, either=["a", "b"]) == {}
    assert verdict(validator, mixed="x") == {
        "mixed": "\"x\" is not valid under any of the schemas listed in the 'anyOf' keyword"}
    assert verdict(validator, either=[1]) == {
        "either": "[1] is not valid under any of the schemas listed in the 'anyOf' keyword"}


def test_explicit_null_is_refused_even_for_optional_inputs(validator):
    assert verdict(validator, maybe=None) == {"maybe": 'null is not of type "string"'}
    assert verdict(validator, image=None) == {"image": 'null is not of type "string"'}
    assert verdict(validator, text=None) == {"text": 'null is not of type "string"'}


def test_required_and_unknown_fields(validator):
    assert validator.validate({}) == [("text", "Field required")]
    assert verdict(validator, bogus=1) == {
        "bogus": "Additional properties are not allowed ('bogus' was unexpected)"}


def test_every_error_at_once_sorted_by_field_then_missing_ones(validator):
    errors = validator.validate({"size": 9, "count": "x", "zzz": 1, "color": 1})
    # `color: 1` is both not a choice and not a string: two errors, as the reference gives
    assert [field for field, _ in errors] == ["color", "color", "count", "size", "zzz", "text"]
    assert errors[-1] == ("text", "Field required")


def test_the_input_must_be_an_object(validator):
    assert validator.validate([1]) == [("", '[1] is not of type "object"')]


def test_a_json_integer_is_accepted_for_a_float_and_2_0_for_an_int(validator):
    assert verdict(validator, ratio=1, count=2.0) == {}


def test_defaults_and_secret_fields_are_known_to_the_parent(validator):
    assert validator.defaults["count"] == 3 and validator.defaults["color"] == "red"
    assert validator.secret_fields == {"token"}
    assert validator.redact({"token": "s3", "text": "a"}) == {"token": "**********",
                                                             "text": "a"}


# ---------------------------------------------------------------- through the server


def test_server_answers_422_with_every_error_and_model_gets_converted_values(serve):
    server = serve(CONTRACT / "inputs")
    r = server.client.post("/predictions", json={"input": {
        "count": 50, "color": "pink", "maybe": None, "numbers": [1, -2], "bogus": True}})
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert [d["loc"] for d in detail] == [
        ["body", "input", "bogus"], ["body", "input", "color"], ["body", "input", "count"],
        ["body", "input", "maybe"], ["body", "input", "numbers/1"], ["body", "input", "text"]]
    assert detail[-1] == {"loc": ["body", "input", "text"], "msg": "Field required",
                          "type": "value_error.missing"}
    assert detail[2]["msg"] == "50 is greater than the maximum of 10"

    # valid: the most specific union member wins, numbers are converted as declared
    body = server.predict(text="abc", ratio=1, count=2.0, mixed=True, either=["q"],
                          extra={"k": 1}, blob={"raw": [1]}).json()
    assert body["status"] == "succeeded", body
    got = {k: (v["type"], v["value"]) for k, v in body["output"].items()}
    assert got["ratio"] == ("float", 1.0)
    assert got["count"] == ("int", 2)
    assert got["mixed"] == ("bool", True)
    assert got["either"] == ("list", ["q"])
    assert got["blob"] == ("dict", {"raw": [1]})
    assert got["color"] == ("str", "red")  # the default
    assert got["maybe"] == ("NoneType", None)  # omitted optional input
    for value, kind in ((1, "int"), (1.5, "float")):
        out = server.predict(text="abc", mixed=value).json()["output"]
        assert out["mixed"] == {"type": kind, "value": value}
