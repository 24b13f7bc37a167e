"""The server's health at one moment, as typed values (`Service.health()`).

Each front end words it its own way: Cog's routes build `/health-check`'s JSON from it,
V2 answers `/v2/health/ready` from its status. Nothing here knows either wire format.
"""

from __future__ import annotations

from dataclasses import dataclass

from cogserve.runtime.setup_report import SetupView
from cogserve.wire.states import Health


@dataclass(frozen=True)
class QueueView:
    length: int  # predictions waiting for a slot
    size: int  # --queue-size


@dataclass(frozen=True)
class WorkerView:
    id: int
    status: Health
    pid: int | None
    busy: int  # slots in use


@dataclass(frozen=True)
class HealthSnapshot:
    status: Health  # UNHEALTHY when the model's healthcheck() failed
    setup: SetupView
    versions: dict[str, str]  # what runs the model (python_sdk, python), once reported
    user_healthcheck_error: str | None = None
    queue: QueueView | None = None  # with --queue-size
    workers: tuple[WorkerView, ...] | None = None  # with more than one worker
    store_error: str | None = None  # the durable store cannot be used (status UNHEALTHY)


@dataclass(frozen=True)
class Capacity:
    """Slots and queue right now (the metrics' gauges)."""

    slots: int  # of the ready workers
    in_use: int
    workers_ready: int
    queue_length: int
