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
import sys
from typing import Any

from cogserve.model import text_values
from cogserve.model.validation import InputValidator
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


def coerce_inputs(pairs: list[str], validator: InputValidator) -> dict[str, Any]:
    """Turn `-i name=value` pairs into typed JSON using the Input schema
    (`model/text_values.py`): `-i n=5` is an int for an int input and a string for a str
    input, a repeated `-i` builds a list for an array input, and `@path` is the file's
    data URL for a file input and its text for any other, as `cog predict` does.
    """
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
        item, is_list = text_values.item_schema(validator, name)
        value = _coerce(name, raw, item, validator.components)
        if is_list:
            result.setdefault(name, []).append(value)
        else:
            result[name] = value
    return result


def _coerce(name: str, raw: str, prop: dict[str, Any], components: dict[str, Any]) -> Any:
    if text_values.is_file(prop) and not raw.startswith("@") and ":" not in raw \
            and pathlib.Path(raw).is_file():  # `-i image=photo.jpg`: the @ forgotten
        raise InputError(f'input "{name}": {raw!r} is a file here, not a URL: write '
                         f"-i {name}=@{raw} to send it")
    if raw.startswith("@"):
        if text_values.is_file(prop):
            return _data_url(name, raw[1:])
        filename = raw[1:]
        try:
            raw = pathlib.Path(filename).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError(f'input "{name}": no such file {filename!r}') from None
        except OSError as exc:  # a folder, no permission
            raise InputError(f'input "{name}": failed to read file {filename!r}: '
                             f"{exc.strerror or exc}") from None
        except UnicodeDecodeError:  # a binary file for an input that takes text
            raise InputError(f'input "{name}": file {filename!r} is not UTF-8 text (only '
                             "a Path or File input takes a binary file)") from None
    return text_values.typed(name, raw, prop, components)
