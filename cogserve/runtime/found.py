"""What the runtime knows of one id: the answer of `Service.lookup`, the one question a
front end asks about an id (create/PUT, cancel and GET all ask it).

Each answer is its own type, so a front end `match`es on it:

- `Running` / `Queued`: this server holds it now (the `Prediction` itself);
- `Finished`: it finished here recently; its final JSON (and SSE frames) from the
  store's cache in memory (`runtime/store/cache.py`);
- `Stored`: the durable store has it (it ran before a restart, or on a replica);
- `Evicted`: it finished, but was pushed out of the bounds since (`bounds` says which);
- `Unknown`: nothing is known of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from cogserve.runtime.history import encoded_frame
from cogserve.runtime.prediction import Prediction


@dataclass(frozen=True, slots=True)
class Running:
    prediction: Prediction


@dataclass(frozen=True, slots=True)
class Queued:
    prediction: Prediction  # waiting for a slot (--queue-size, or a @batch)


class Finished(NamedTuple):
    """One finished prediction as it is answered again (a tuple: the cache makes one per
    prediction, and a frozen dataclass's __init__ sets each field through a call)."""

    kind: str  # "prediction" or "training": /predictions/{id} never shows a training
    body: bytes  # the final prediction object, JSON
    frames: bytes  # its SSE events (streaming models), ready to send
    skipped: int  # SSE events the history had already dropped (replay is truncated)

    @property
    def size(self) -> int:
        return len(self.body) + len(self.frames)


@dataclass(frozen=True, slots=True)
class Stored:
    body: bytes  # the prediction object as last written
    status: str
    final: bool  # False: accepted or running on another server (or before a restart)

    @property
    def frames(self) -> bytes:
        """What an SSE client gets of a final one: its `completed` event."""
        return encoded_frame(b"completed", self.body)


@dataclass(frozen=True, slots=True)
class Evicted:
    bounds: str  # the bounds that pushed it out, for the client's 404


@dataclass(frozen=True, slots=True)
class Unknown:
    pass


UNKNOWN = Unknown()
Found = Running | Queued | Finished | Stored | Evicted | Unknown
