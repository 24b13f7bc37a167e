"""What the runtime refuses, as types: each front end maps them to its own answer, once.

`Service` raises these and knows nothing of HTTP. The HTTP status of each is one table
(`cogserve.http.refusals`), which Cog's routes (`cog_routes.refusal_response`) and V2
(`v2.routes.refusal_error`) share, each with its own body; the CLI (`cogserve.cli`)
prints it. The message (`str(exc)`) is the text a client reads.
"""

from __future__ import annotations

from cogserve.states import Health


class Refusal(Exception):
    """The runtime will not do what was asked."""


class NotReady(Refusal):
    """The model cannot take predictions now (still starting, setup failed, defunct, or
    the server is shutting down)."""

    def __init__(self, message: str, health: Health | None) -> None:
        super().__init__(message)
        self.health = health  # None: the server is shutting down


class AtCapacity(Refusal):
    """Every prediction slot is busy."""

    def __init__(self) -> None:
        super().__init__("At capacity - all prediction slots busy")


class AlreadyRunning(Refusal):
    """A prediction with this id is running (a POST that reuses a running id)."""

    def __init__(self, prediction_id: str) -> None:
        super().__init__(f"A prediction with id {prediction_id!r} is already running")
        self.prediction_id = prediction_id


class InputNotSendable(Refusal):
    """The input passed validation but cannot be encoded for the worker (nested too
    deeply, an integer beyond 64 bits)."""


class UnknownPrediction(Refusal):
    """No prediction with this id is running."""

    def __init__(self, prediction_id: str) -> None:
        super().__init__(f"No prediction with id {prediction_id!r} is running")
        self.prediction_id = prediction_id


class QueueFull(Refusal):
    """Every slot is busy and the queue (--queue-size) is full; try again later."""

    def __init__(self, capacity: int, retry_after: int) -> None:
        super().__init__(f"The queue is full ({capacity} predictions waiting); retry later")
        self.retry_after = retry_after  # seconds, an estimate
