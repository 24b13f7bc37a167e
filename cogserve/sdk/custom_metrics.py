"""Custom metric names, modes and how a recorded value folds into a prediction's metrics.

One function, `apply_metric`, is used both in the worker (so a type change raises inside
the model, where the author can see it) and in the parent (to build the envelope).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

MAX_NAME_LENGTH = 128
MAX_SEGMENTS = 4
_ALLOWED = (bool, int, float, str, list, dict)


class MetricMode(StrEnum):
    """How a recorded value folds in; the values are the reference's names on the wire
    (SSE `metric` events), whichever alias the model used."""

    REPLACE = "replace"
    INCREMENT = "increment"
    APPEND = "append"


_MODE_ALIASES = {None: MetricMode.REPLACE, "replace": MetricMode.REPLACE,
                 "incr": MetricMode.INCREMENT, "increment": MetricMode.INCREMENT,
                 "append": MetricMode.APPEND}


def parse_mode(mode: str | None) -> MetricMode:
    """`replace` (the default), `incr` / `increment`, `append`; anything else is an error."""
    try:
        return _MODE_ALIASES[mode]
    except (KeyError, TypeError):
        raise TypeError(f"Invalid metric mode: '{mode}'. Expected 'replace', 'incr', or "
                        "'append'.") from None


def check_name(name: str) -> list[str]:
    """Validate a metric name and return its dot-path segments.

    The rules, their order and their wording are the reference's (coglet-python
    metric_scope.rs), one rule per message, so an author sees the same error on both.
    """
    if not isinstance(name, str):
        raise TypeError(f"metric name must be a string, not {type(name).__name__}")
    if name == "predict_time":
        raise ValueError("'predict_time' is reserved by the runtime")
    if name.startswith("cog."):
        raise ValueError("the 'cog.' prefix is reserved for system metrics")
    if not name:
        raise ValueError("metric name must not be empty")
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"metric name must be {MAX_NAME_LENGTH} characters or fewer "
                         f"(got {len(name)} characters)")
    parts = name.split(".")
    if len(parts) > MAX_SEGMENTS:
        raise ValueError(f"metric name must have at most {MAX_SEGMENTS} dot-separated "
                         f"segments (got {len(parts)})")
    for index, part in enumerate(parts):
        if not part:
            if index == 0:
                raise ValueError("metric name must not start with a dot")
            if index == len(parts) - 1:
                raise ValueError("metric name must not end with a dot")
            raise ValueError("metric name must not contain empty segments (consecutive dots)")
        _check_segment(part)
    return parts


def _check_segment(part: str) -> None:
    if not (part[0].isascii() and part[0].isalpha()):
        raise ValueError(f"metric name segment '{part}' must start with a letter")
    after_underscore = False
    for char in part[1:]:
        if char == "_":
            if after_underscore:
                raise ValueError(f"metric name segment '{part}' must not contain consecutive "
                                 "underscores")
            after_underscore = True
        elif char.isascii() and char.isalnum():
            after_underscore = False
        else:
            raise ValueError(f"metric name segment '{part}' contains invalid character "
                             f"'{char}'")
    if after_underscore:
        raise ValueError(f"metric name segment '{part}' must end with a letter or digit")


def apply_metric(store: dict[str, Any], name: str, value: Any, mode: str | None) -> None:
    """Fold one recorded value into `store` (nested by dot path), enforcing type stability."""
    parts = check_name(name)
    mode = parse_mode(mode)
    node = store
    for depth, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            if value is None:
                return
            child = node[part] = {}
        elif not isinstance(child, dict):  # `a` is a number: `a.b` would silently erase it
            prefix = ".".join(parts[: depth + 1])
            raise TypeError(f"Metric {prefix!r} has type {type(child).__name__}, cannot set "
                            f"{name!r} inside it without deleting first")
        node = child
    key = parts[-1]
    if value is None:
        node.pop(key, None)
        return
    if not isinstance(value, _ALLOWED):
        raise TypeError(f"Unsupported metric value type: {type(value).__name__}. "
                        "Expected bool, int, float, str, list, or dict.")
    old = node.get(key)
    if mode is MetricMode.APPEND:
        if old is None:
            node[key] = [value]
        elif isinstance(old, list):
            old.append(value)
        else:
            raise TypeError(f"Metric {name!r} has type {type(old).__name__}, cannot append to it "
                            "without deleting first")
        return
    if mode is MetricMode.INCREMENT:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"Metric {name!r}: incr needs a number, not {type(value).__name__}")
        if old is None:
            node[key] = value
            return
        if isinstance(old, bool) or not isinstance(old, int | float):
            raise TypeError(f"Metric {name!r} has type {type(old).__name__}, cannot incr it "
                            "without deleting first")
        node[key] = old + value
        return
    if old is not None and _kind(old) != _kind(value):
        raise TypeError(f"Metric {name!r} has type {type(old).__name__}, cannot set to "
                        f"{type(value).__name__} without deleting first")
    node[key] = value


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__
