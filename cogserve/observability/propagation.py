"""What a request tells the tracer, read by Cog's rules: an operator's extra trace header,
and the caller's `trace.*` context tags.

Standard library only (unit-tested without OpenTelemetry); `tracing.py` applies them.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping

_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")
_HEX = re.compile(r"^[0-9a-f]{1,32}$")

CALLER_PREFIX = "trace."
MAX_CALLER_TAGS = 16
MAX_SUFFIX_BYTES = 64
MAX_VALUE_BYTES = 128
MAX_CALLER_BYTES = 4096
_SUFFIX = re.compile(r"^[A-Za-z0-9._-]+$")


def valid_traceparent(value: str | None) -> bool:
    match = _TRACEPARENT.match(value or "")
    return match is not None and set(match.group(1)) != {"0"} and set(match.group(2)) != {"0"}


def from_custom_header(value: str, header_format: str) -> str | None:
    """A `traceparent` for the operator's header (`trace_header_format` w3c or jaeger),
    or None when the value is malformed (ignored, never a refusal)."""
    text = value.strip()
    if header_format == "w3c":
        return text.lower() if valid_traceparent(text.lower()) else None
    parts = urllib.parse.unquote(text).lower().split(":")  # jaeger: uber-trace-id
    if len(parts) != 4 or not (_HEX.match(parts[0]) and _HEX.match(parts[1])
                               and len(parts[1]) <= 16):
        return None
    try:
        flags = int(parts[3], 16)
    except ValueError:
        return None
    traceparent = f"00-{parts[0]:0>32}-{parts[1]:0>16}-{flags & 1:02x}"
    return traceparent if valid_traceparent(traceparent) else None


def caller_attributes(context: Mapping[str, object]) -> dict[str, str]:
    """`trace.X` entries of a request's context as `caller.X` span attributes: at most 16,
    names of letters, digits, `.`, `_`, `-` up to 64 bytes, string values cut to 128 bytes
    at a character boundary, 4 KiB in all (docs/observability.md, caller-supplied tags)."""
    attributes: dict[str, str] = {}
    total = 0
    for key in sorted(k for k in context if k.startswith(CALLER_PREFIX)):
        value = context[key]
        suffix = key[len(CALLER_PREFIX):]
        if not isinstance(value, str) or not _SUFFIX.match(suffix) \
                or len(suffix.encode()) > MAX_SUFFIX_BYTES:
            continue
        cut = value.encode()[:MAX_VALUE_BYTES].decode(errors="ignore")
        name = "caller." + suffix
        size = len(name.encode()) + len(cut.encode())
        if len(attributes) == MAX_CALLER_TAGS or total + size > MAX_CALLER_BYTES:
            break
        attributes[name] = cut
        total += size
    return attributes
