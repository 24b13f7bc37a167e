"""The runtime's fixed sets: health states, prediction statuses, prediction events and
the webhook events a client may filter on.

`StrEnum`s, so each member is the exact string the API sends (and compares equal to
it), while code that branches on them is checked by the type checker.
"""

from __future__ import annotations

from enum import StrEnum


class Health(StrEnum):
    """`/health-check`'s `status`. BUSY and UNHEALTHY are reported, never stored: BUSY is
    READY with every slot taken, UNHEALTHY is READY/BUSY with a failing healthcheck()."""

    STARTING = "STARTING"
    READY = "READY"
    BUSY = "BUSY"
    SETUP_FAILED = "SETUP_FAILED"
    DEFUNCT = "DEFUNCT"
    UNHEALTHY = "UNHEALTHY"


SERVING = frozenset({Health.READY, Health.BUSY})  # a model that can take predictions
DEAD = frozenset({Health.SETUP_FAILED, Health.DEFUNCT})  # up, but can never serve again


class Status(StrEnum):
    """A prediction's (and setup's) status, as Cog names them."""

    STARTING = "starting"
    PROCESSING = "processing"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELED = "canceled"


TERMINAL = frozenset({Status.SUCCEEDED, Status.FAILED, Status.CANCELED})


class Event(StrEnum):
    """What a prediction announces to its listeners (webhook sender, SSE history, CLI);
    also the SSE event names."""

    START = "start"  # payload {}
    OUTPUT = "output"  # {chunk, index}
    LOG = "log"  # {source, data}
    METRIC = "metric"  # {name, value, mode}
    COMPLETED = "completed"  # {}


class WebhookEvent(StrEnum):
    """The events of `webhook_events_filter` (note LOGS, where the prediction says LOG)."""

    START = "start"
    OUTPUT = "output"
    LOGS = "logs"
    COMPLETED = "completed"
