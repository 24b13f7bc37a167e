"""`cogserve predict` words the validator's errors as `cog predict` does."""

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
