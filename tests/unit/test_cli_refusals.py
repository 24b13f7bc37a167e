"""What the CLI refuses before anything starts: `cogserve predict` words the validator's
errors as `cog predict` does, and `cogserve serve` refuses numbers out of range."""

from __future__ import annotations

import pytest

from cogserve.model.validation import InputValidator
from cogserve.model.verdicts import InputError, check_inputs, check_names

SCHEMA = {"components": {"schemas": {"Input": {
    "type": "object",
    "properties": {
        "image": {"type": "string", "format": "uri"},
        "words": {"type": "array", "items": {"type": "string", "maxLength": 3},
                  "maxItems": 3},
        "either": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
        "n": {"type": "integer"},
    },
    "required": ["n"],
}}}}
VALIDATOR = InputValidator(SCHEMA)


@pytest.mark.parametrize("inputs,message", [
    ({"n": 1, "words": ["a", "long"]}, 'invalid input "words.1": maximum string length is 3'),
    ({"n": 1, "words": ["a", 2]}, 'invalid input "words.1": expected string, got number'),
    ({"n": 1, "words": [None]}, 'invalid input "words.0": expected string, got null'),
    ({"n": 1, "words": ["a"] * 4}, 'invalid input "words": maximum number of items is 3'),
    ({"n": 1, "either": "x"}, 'invalid input "either": value doesn\'t match any schema from '
                              '"anyOf"'),
    ({"n": 1, "either": None},
     'invalid input "either": must not be null (omit the input to use its default)'),
    ({"n": 1, "image": "/etc/hostname"}, 'invalid input "image": "/etc/hostname" is not a '
                                         'URL: file inputs must be http://, https:// or data: '
                                         'URLs'),
    ({"n": 2.0**70}, 'invalid input "n": 1.1805916207174113e+21 is outside the 64-bit '
                     'integer range (larger integers lose their exact value in JSON parsing)'),
    ({"words": [1, 2]}, 'input validation failed:\n- invalid input "words.0": expected '
                        'string, got number\n- missing required input "n"'),
])
def test_each_rule_in_cogs_words(inputs, message):
    with pytest.raises(InputError) as caught:
        check_inputs(inputs, VALIDATOR)
    assert str(caught.value) == message


def test_unknown_names_alone_and_all_at_once():
    with pytest.raises(InputError) as caught:
        check_names(["zz", "n", "aa"], VALIDATOR)
    assert str(caught.value) == ('unknown inputs "aa", "zz"; valid inputs are: either, image, '
                                 'n, words')
    check_names(["n", "words"], VALIDATOR)  # known names pass


def test_valid_inputs_pass():
    check_inputs({"n": 2, "words": ["a"], "either": True, "image": "data:,x"}, VALIDATOR)


@pytest.mark.parametrize("args, message", [
    # a port past 65535 was taken modulo 65536: the log said 99999, the socket was 34463
    (["serve", "-p", "99999"], "argument -p/--port: 99999 is not a port number (0-65535)"),
    (["serve", "-p", "-1"], "argument -p/--port: -1 is less than 0"),
    (["serve", "-p", "http"], "argument -p/--port: 'http' is not a whole number"),
    (["serve", "--metrics-port", "0"], "argument --metrics-port: 0 is less than 1"),
    # a limit of 0 bytes answered every request 413; its variable already refused it
    (["serve", "--max-body-bytes", "0"], "argument --max-body-bytes: 0 is less than 1"),
    # written into a Dockerfile as it was; a traceback from Ray's bind
    (["dockerfile", "--port", "99999"], "argument --port: 99999 is not a port number "
                                        "(1-65535)"),
    (["ray", "-p", "70000"], "argument -p/--port: 70000 is not a port number (1-65535)"),
])
def test_numbers_out_of_range_are_refused_before_anything_starts(args, message, capsys):
    from cogserve.cli.main import main

    with pytest.raises(SystemExit) as caught:
        main([*args, "."])
    assert caught.value.code == 2
    assert capsys.readouterr().err.strip().endswith(f"error: {message}")
