"""The durable prediction store's interface: what it keeps, and what every backend does.

`--store` (`COGSERVE_STORE`) picks a backend (`runtime/store/backends.py`): SQLite in a
file (the default, `runtime/store/sqlite_backend.py`) or Redis shared by replicas
(`runtime/store/redis_backend.py`); `--store memory` has none, and the server keeps what it
always kept in memory (`runtime/store/cache.py`). A backend is plain blocking code: the
server calls it from one writer thread (`runtime/store/durable.py`) and, for reads, from a
thread of asyncio's pool, never on the event loop.

What a backend holds:

- a `Record` per prediction or training: accepted asynchronously ones from before their
  `202` (with the request that makes them again, in case they never started), every
  state change as a new body, and finished ones (sync ones too) with their final JSON.
  Finished records are bounded by count, bytes and age; the oldest go first, and their
  ids are remembered for a while, so a GET can say "evicted" rather than "unknown".
- a `Hook` per webhook delivery not yet made (the outbox), in order per prediction.
- who owns what is unfinished: `claim` hands a starting server (or a replica sweeping
  for dead ones) the unfinished records and pending hooks of owners that are gone.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum


class Stage(StrEnum):
    """Where a stored prediction is: what a restart does with it depends on this alone."""

    QUEUED = "queued"  # accepted, not yet sent to a worker: a restart runs it
    RUNNING = "running"  # sent to a worker: a restart fails it (it may have had effects)
    FINISHED = "finished"  # its body is final


@dataclass(frozen=True, slots=True)
class Bounds:
    """How many finished records are kept: count, bytes of their bodies, age."""

    count: int
    bytes: int
    age: float | None = None  # seconds since it finished; None: no bound


@dataclass(slots=True)  # not frozen: a frozen one costs ~5x to make (one per prediction)
class Record:
    """One prediction as stored. `body` is its JSON as clients see it; `request` the
    JSON of what `runtime/store/recovery.py` needs to make it again (async ones only)."""

    id: str
    kind: str  # "prediction" or "training"
    status: str  # the body's status, for listing by status
    stage: Stage
    created: float  # epoch seconds: listing is newest first
    body: bytes
    finished: float | None = None  # epoch seconds, for the age bound and eviction order
    request: bytes | None = None


# a finished prediction as `FinishedBatch` lists it: (id, kind, status, created, body), the
# status a plain str (sqlite3 adapts a str subclass, raising and catching an
# AttributeError per value)
Row = tuple[str, str, str, float, bytes]


@dataclass(slots=True)
class FinishedBatch:
    """Finished predictions written in bulk: what a server's sync predictions become. Each
    row means what a `Record` of stage FINISHED (no request) would, finished when it is
    written (a moment after it finished: the age bound needs no better). No object per
    prediction, and a backend hands a batch to its storage in a call or a few, not one
    per prediction (`runtime/store/sqlite_finished.py`)."""

    rows: list[Row]


@dataclass(slots=True)
class Hook:
    """One webhook delivery of the outbox: `seq` orders a prediction's deliveries; a
    newer throttled update replaces a queued one by writing the same `seq` again."""

    id: str
    seq: int
    delivery: str  # webhooks.Delivery: start, update, completed
    url: str
    body: bytes
    headers: bytes = b"{}"  # JSON: the trace context the deliveries carry


@dataclass(slots=True)
class HookDone:
    """A delivery made (or given up on): it leaves the outbox."""

    id: str
    seq: int


@dataclass(slots=True)
class Dropped:
    """A finished prediction too big for the bounds: forgotten at once (its record, if
    it had one, goes) and remembered as evicted, as the memory store does."""

    id: str


Write = Record | FinishedBatch | Hook | HookDone | Dropped


@dataclass
class Claimed:
    """What a server took over: unfinished records and the pending hooks of owners that
    are gone, each prediction's hooks in order."""

    records: list[Record] = field(default_factory=list)
    hooks: list[Hook] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Page:
    bodies: list[bytes]
    next: str | None  # the cursor of the next page; None: this was the last


class PredictionStore(ABC):
    """A durable store of predictions (see the module's docstring). Methods block; each
    raises `StoreError` when the backend cannot be reached or used."""

    description: str  # what it is, for logs and errors (a path, a redis URL)
    shared: bool  # several servers use it at once (their unfinished records are theirs)

    @abstractmethod
    def write(self, batch: Sequence[Write], bounds: Bounds, owner: str) -> None:
        """Apply the writes in order, at once (a crash keeps all or none), then evict
        finished records beyond `bounds`. Records written are owned by `owner`."""

    @abstractmethod
    def get(self, prediction_id: str) -> Record | None: ...

    @abstractmethod
    def was_evicted(self, prediction_id: str) -> bool: ...

    @abstractmethod
    def page(self, kind: str, status: str | None, limit: int, cursor: str | None) -> Page:
        """Bodies of `kind` (with `status`, if given), newest first; `cursor` is a
        previous page's `next`."""

    @abstractmethod
    def claim(self, owner: str) -> Claimed:
        """Make `owner` the owner of everything unfinished whose owner is gone, and
        return it. Atomic: two servers never claim the same record."""

    @abstractmethod
    def heartbeat(self, owner: str, lease: float) -> None:
        """Say `owner` is alive for `lease` more seconds (shared stores)."""

    @abstractmethod
    def close(self, owner: str) -> None:
        """Release the store (a clean exit: `owner`'s lease ends at once)."""


def cursor_of(created: float, prediction_id: str) -> str:
    """A page's cursor: where the next page starts (newest first: older than this)."""
    return f"{created!r}:{prediction_id}"


def parse_cursor(cursor: str) -> tuple[float, str]:
    """A cursor back into (created, id); raises ValueError for one not made here."""
    created, sep, prediction_id = cursor.partition(":")
    if not sep:
        raise ValueError(cursor)
    return float(created), prediction_id
