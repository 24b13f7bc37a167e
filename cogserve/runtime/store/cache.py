"""Recently finished predictions and trainings, so a client can find them again.

An addition to Cog's API (Cog forgets a prediction once it has answered): with it
`GET /predictions/{id}` can poll, a retried `PUT` of a finished id answers from here
instead of running the model a second time, and a cancel of a finished id is a no-op.

Each entry is the final prediction object encoded as JSON once (the sync response
sends the same bytes), plus, for a `@streaming` model, the SSE frames its event
history kept, so a `PUT` with `Accept: text/event-stream` can replay them. Outputs that
are files are kept as the URLs the client got (the upload URL with `--upload-url`, else
the data URL, which counts in full against the byte bound), never re-read.

The store is bounded by count and by bytes; the oldest entries go first. The ids of
evicted entries are remembered (up to EVICTED_IDS of them, a few hundred bytes each)
so a GET for one can say it was evicted rather than that it never existed.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from cogserve.runtime.found import Finished
from cogserve.runtime.history import history_of
from cogserve.runtime.prediction import Prediction
from cogserve.runtime.settings import (
    BYTES_VARIABLE,
    COUNT_VARIABLE,
    DEFAULT_BYTES,
    DEFAULT_COUNT,
)

EVICTED_IDS = 10_000


_new_finished = tuple.__new__  # a Finished without NamedTuple's `__new__` (a Python call)


class RecentCache:
    """The last `max_count` finished predictions within `max_bytes`; one per Service,
    in front of the durable store (or alone, with `--store memory`)."""

    def __init__(self, max_count: int = DEFAULT_COUNT, max_bytes: int = DEFAULT_BYTES) -> None:
        self.max_count = max(0, max_count)
        self.max_bytes = max(0, max_bytes)
        self.entries: OrderedDict[str, Finished] = OrderedDict()
        self.bytes = 0
        self.evicted: OrderedDict[str, None] = OrderedDict()

    def listener(self, prediction: Prediction, event: str, payload: dict[str, Any]) -> None:
        """Prediction listener (subscribed last, so the SSE history is complete): keeps it."""
        if event == "completed":
            self.keep(prediction)

    def keep(self, prediction: Prediction) -> None:
        ident = prediction.id
        entries = self.entries
        if ident in entries:
            self._drop(ident)
        if self.evicted:
            self.evicted.pop(ident, None)
        body = prediction.encoded()  # the bytes SSE's `completed` event carried, if any
        history = history_of(prediction) if len(prediction.listeners) > 1 else None
        if history is None:  # no SSE history: the body alone
            frames, skipped, size = b"", 0, len(body)
        else:
            kept = list(history.events or ())
            size = len(body) + sum(map(len, kept))
            frames, skipped = b"", history.total - len(kept)
        # sized before the frames are joined: an entry too big to keep costs no copy
        if size > self.max_bytes or self.max_count == 0:
            self._remember_evicted(ident)
            return
        if history is not None:
            frames = b"".join(kept)
        entries[ident] = _new_finished(Finished, (prediction.kind, body, frames, skipped))
        self.bytes += size
        while len(entries) > self.max_count or self.bytes > self.max_bytes:
            oldest, dropped = entries.popitem(last=False)
            self.bytes -= len(dropped.body) + len(dropped.frames)
            self._remember_evicted(oldest)

    def get(self, prediction_id: str, kind: str) -> Finished | None:
        entry = self.entries.get(prediction_id)
        return entry if entry is not None and entry.kind == kind else None

    def holds(self, prediction_id: str) -> bool:
        """Whether this id finished here (kept, or dropped to make room)."""
        return prediction_id in self.entries or prediction_id in self.evicted

    def was_evicted(self, prediction_id: str) -> bool:
        return prediction_id in self.evicted

    def describe_bounds(self) -> str:
        return (f"the server keeps the last {self.max_count} finished predictions within "
                f"{self.max_bytes} bytes ({COUNT_VARIABLE}, {BYTES_VARIABLE})")

    def _drop(self, prediction_id: str) -> None:
        entry = self.entries.pop(prediction_id, None)
        if entry is not None:
            self.bytes -= entry.size

    def _remember_evicted(self, prediction_id: str) -> None:
        self.evicted[prediction_id] = None
        if len(self.evicted) > EVICTED_IDS:
            self.evicted.popitem(last=False)
