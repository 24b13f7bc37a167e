"""The one table from the runtime's refusals to HTTP statuses, for both front ends.

Cog's routes and V2 answer a `Refusal` with the same status (and, for a full queue, the
same `Retry-After`); each wraps it in its own body (`cog_routes.refusal_response`,
`v2.routes.refusal_error`).
"""

from __future__ import annotations

from cogserve.runtime.errors import (
    AlreadyRunning,
    AtCapacity,
    EvictedPrediction,
    InputNotSendable,
    NothingToCancel,
    NotReady,
    QueueFull,
    Refusal,
    RunningElsewhere,
    StoreUnavailable,
    UnknownPrediction,
)

STATUS: dict[type[Refusal], int] = {
    NotReady: 503,
    AtCapacity: 409,
    AlreadyRunning: 409,
    QueueFull: 429,
    InputNotSendable: 422,
    UnknownPrediction: 404,
    NothingToCancel: 404,
    EvictedPrediction: 404,
    RunningElsewhere: 409,
    StoreUnavailable: 503,
}
OTHER = 400  # a Refusal kind added without a row here


def status_of(exc: Refusal) -> tuple[int, list[tuple[bytes, bytes]]]:
    """The status and extra headers a refusal is answered with."""
    if isinstance(exc, QueueFull):  # when to try again
        return STATUS[QueueFull], [(b"retry-after", str(exc.retry_after).encode())]
    return STATUS.get(type(exc), OTHER), []
