"""The per-request deadline: the `X-Prediction-Timeout: SECONDS` request header.

Cog's request envelope has no deadline field, and a body field would change the
schema every Cog client validates against, so the deadline travels as a header, read
here for both front ends (Cog's routes and V2; V2 also takes Triton's `timeout`
parameter, `cogserve.v2.routes`). It counts from the moment the prediction starts
running (time in the queue is bounded by --queue-timeout instead), and
`--predict-timeout`, when set, caps it: a request can shorten the operator's limit,
never extend it. A bad value is a `RequestError` (400), which each front end shapes."""

from __future__ import annotations

import math

from cogserve.http.asgi import Scope
from cogserve.http.responses import RequestError, header

HEADER = b"x-prediction-timeout"


def request_timeout(scope: Scope) -> float | None:
    """Seconds from the header, None without one, 400 for anything but a positive number."""
    raw = header(scope, HEADER)
    if raw is None:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise RequestError(400, f"X-Prediction-Timeout must be a positive number of seconds, "
                                f"not {raw!r}")
    return value
