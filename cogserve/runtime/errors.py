"""What the runtime refuses, as types: each front end maps them to its own answer, once.

`Service` raises these and knows nothing of HTTP. The HTTP status of each is one table
(`cogserve.http.refusals`), which Cog's routes (`cog_routes.refusal_response`) and V2
(`v2.routes.refusal_error`) share, each with its own body; the CLI (`cogserve.cli.main`)
prints it. The message (`str(exc)`) is the text a client reads.
"""

from __future__ import annotations

from cogserve.wire.states import Health


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
    """No prediction with this id is running (`recently`: nor finished a while ago)."""

    def __init__(self, prediction_id: str, kind: str = "prediction", *,
                 recently: bool = False) -> None:
        known = " or recently finished" if recently else ""
        super().__init__(f"No {kind} with id {prediction_id!r} is running{known}")
        self.prediction_id = prediction_id


class NothingToCancel(UnknownPrediction):
    """A cancel of an id nothing runs, ran, or stored: Cog's answer carries no body."""


class EvictedPrediction(UnknownPrediction):
    """The id finished, but was pushed out of the store's bounds since."""

    def __init__(self, prediction_id: str, kind: str, bounds: str) -> None:
        super().__init__(prediction_id, kind)
        self.args = (f"{kind.capitalize()} {prediction_id!r} finished but was evicted from "
                     f"the store of recent ones: {bounds}",)


class RunningElsewhere(Refusal):
    """A cancel of an id another server (a replica sharing the store) runs: cancel it
    there. `status` is its state as stored."""

    def __init__(self, prediction_id: str, kind: str, status: str) -> None:
        super().__init__(f"{kind.capitalize()} {prediction_id!r} is running on another server")
        self.status = status


class StoreUnavailable(Refusal):
    """The durable store (--store) cannot be used now: an async request is not accepted
    unrecorded, and what the store holds cannot be read."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the prediction store is unavailable: {reason}")


class QueueFull(Refusal):
    """Every slot is busy and the queue (--queue-size) is full; try again later."""

    def __init__(self, capacity: int, retry_after: int) -> None:
        super().__init__(f"The queue is full ({capacity} predictions waiting); retry later")
        self.retry_after = retry_after  # seconds, an estimate


class StoreError(Exception):
    """The prediction store cannot be used: said at start (with the way out), or while
    serving (the server turns UNHEALTHY with this reason until the store answers again).
    A backend raises it (`runtime/store/interface.py`); the facade turns it into
    `StoreUnavailable` for a request."""

