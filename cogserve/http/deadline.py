"""The per-request deadline: the `X-Prediction-Timeout: SECONDS` request header.

Cog's request envelope has no deadline field, and a body field would change the
schema every Cog client validates against, so the deadline travels as a header (any
front end can read it). It counts from the moment the prediction starts running (time
in the queue is bounded by --queue-timeout instead), and `--predict-timeout`, when
set, caps it: a request can shorten the operator's limit, never extend it.
"""

from __future__ import annotations

import math

from cogserve.http.asgi import Scope
from cogserve.http.responses import HTTPError, header
from cogserve.runtime.states import Status

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
        raise HTTPError(400, {"error": f"X-Prediction-Timeout must be a positive number of "
                                       f"seconds, not {raw!r}", "status": Status.FAILED})
    return value
