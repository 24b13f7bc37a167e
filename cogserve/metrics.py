"""Custom metric names, modes and how a recorded value folds into a prediction's metrics.

One function, `apply_metric`, is used both in the worker (so a type change raises inside
the model, where the author can see it) and in the parent (to build the envelope).
"""

from __future__ import annotations

import re
from typing import Any

_SEGMENT = re.compile(r"^[A-Za-z](?:[A-Za-z0-9]|_(?!_))*(?<![_])$")
MODES = {"replace": "replace", "incr": "incr", "increment": "incr", "append": "append"}
_ALLOWED = (bool, int, float, str, list, dict)


def check_name(name: str) -> list[str]:
    """Validate a metric name and return its dot-path segments.

    The wording follows the reference SDK, so an author sees the same message on both.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("metric name must be a non-empty string")
    if len(name) > 128:
        raise ValueError(f"metric name {name!r} is longer than 128 characters")
    if name.startswith("cog."):
        raise ValueError("the 'cog.' prefix is reserved for system metrics")
    if name == "predict_time":
        raise ValueError("'predict_time' is reserved by the runtime")
    parts = name.split(".")
    if len(parts) > 4:
        raise ValueError(f"metric name {name!r} has more than 4 dot-separated segments")
    for part in parts:
        if _SEGMENT.match(part):
            continue
        if not part[:1].isascii() or not part[:1].isalpha():
            rule = "must start with a letter"
        elif not part[-1].isascii() or not part[-1].isalnum():
            rule = "must end with a letter or digit"
        else:
            rule = "may contain only letters, digits and single underscores"
        raise ValueError(f"metric name segment {part!r} {rule}")
    return parts


def apply_metric(store: dict[str, Any], name: str, value: Any, mode: str) -> None:
    """Fold one recorded value into `store` (nested by dot path), enforcing type stability."""
    parts = check_name(name)
    try:
        mode = MODES[mode]
    except KeyError:
        raise ValueError(f"metric mode must be replace, incr or append, not {mode!r}") from None
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
    if mode == "append":
        if old is None:
            node[key] = [value]
        elif isinstance(old, list):
            old.append(value)
        else:
            raise TypeError(f"Metric {name!r} has type {type(old).__name__}, cannot append to it "
                            "without deleting first")
        return
    if mode == "incr":
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
