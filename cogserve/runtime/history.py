"""A streaming prediction's event history: the replay buffer behind SSE reconnects.

One `EventHistory` is subscribed to each prediction of a `@streaming` model when the
prediction is created (other models pay nothing). It encodes every event once, in
the exact bytes an SSE client receives, keeps the most recent `capacity` of them so a
client reconnecting with `PUT` can be replayed the stream, and hands each new frame
to the live streams attached to it. Encoding once means N clients and the replay
share the same bytes objects: a client costs a list append per event, not a JSON dump.

The replay is bounded by bytes as well as by events (COG_STREAM_HISTORY_BYTES, default
16 MiB): a model that streams big chunks (a fuzzer asking for 100 KB tokens) would
otherwise keep 1024 of them per running prediction in the parent, and the parent's
memory grew by hundreds of MB under fuzzing (issue 13, defect 10). Frames that fall
out are counted like those past the event capacity, so a reconnect is told its replay
is truncated instead of getting a silently partial stream. Log lines past the
prediction's own limit on its logs (COGSERVE_LOGS_LIMIT, `runtime/logcap.py`) go to the
live streams but are not kept, counted the same way: the history holds no more of a
chatty model's logs than its prediction does.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from cogserve.wire.states import Event, Status

if TYPE_CHECKING:
    from cogserve.runtime.prediction import Prediction

DEFAULT_CAPACITY = 1024
DEFAULT_MAX_BYTES = 16 * 1024 * 1024


class Stream(Protocol):
    """What a live SSE stream offers the history: a non-blocking push of one frame."""

    def push(self, frame: bytes, last: bool) -> None: ...


# looked up once: `Event.X` goes through the enum's class lookup each time (~75 ns on
# Python 3.11), and a streamed token checked five of them (scenario 4)
_OUTPUT, _LOG, _METRIC, _START, _COMPLETED = (
    Event.OUTPUT, Event.LOG, Event.METRIC, Event.START, Event.COMPLETED)


def frame(name: bytes, data: Any) -> bytes:
    """One SSE event as sent: `event: NAME\\ndata: JSON\\n\\n` (orjson never emits a newline)."""
    return encoded_frame(name, orjson.dumps(data))


def encoded_frame(name: bytes, data: bytes) -> bytes:
    """`frame` of data that is JSON already."""
    return b"event: " + name + b"\ndata: " + data + b"\n\n"


def encode(prediction: Prediction, event: Event, payload: dict[str, Any]) -> bytes:
    """The SSE frame for one Prediction event; keys in the reference's (sorted) order."""
    if event is _OUTPUT:
        return frame(b"output", {"chunk": payload["chunk"], "index": payload["index"]})
    if event is _LOG:
        return frame(b"log", {"data": payload["data"], "source": payload["source"]})
    if event is _METRIC:
        return frame(b"metric", {"mode": payload["mode"], "name": payload["name"],
                                 "value": payload["value"]})
    if event is _START:
        return frame(b"start", {"id": prediction.id, "status": Status.PROCESSING})
    return encoded_frame(b"completed", prediction.encoded())  # the stored answer's bytes


class EventHistory:
    """Prediction listener: the replay ring buffer plus the fan-out to live streams."""

    __slots__ = ("events", "capacity", "max_bytes", "bytes", "total", "start", "streams",
                 "finished")

    def __init__(self, capacity: int = DEFAULT_CAPACITY,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        keeps = capacity > 0 and max_bytes > 0
        # at `capacity` the deque drops its oldest frame as it takes a new one
        self.events: deque[bytes] | None = deque(maxlen=capacity) if keeps else None
        self.capacity = capacity
        self.max_bytes = max_bytes
        self.bytes = 0  # the sum of the kept frames' lengths, at most max_bytes
        self.total = 0  # events seen, so `total - len(events)` is how many fell out
        self.start: bytes | None = None  # kept even at capacity 0: the creator's first event
        self.streams: list[Stream] = []
        self.finished = False

    def __call__(self, prediction: Prediction, event: Event, payload: dict[str, Any]) -> None:
        self.total += 1
        last = event is _COMPLETED
        events = self.events
        if event is _LOG and prediction.logs_capped:
            events = None  # past the prediction's log limit: told live, not kept
        if events is None and not self.streams and event is not _START:
            self.finished = self.finished or last
            return  # nobody to tell and nothing to keep: skip the encoding
        data = encode(prediction, event, payload)
        if event is _START:
            self.start = data
        if events is not None:  # kept, within both bounds (inline: once per event)
            if len(events) == self.capacity:  # the oldest goes as this one comes
                self.bytes -= len(events[0])
            events.append(data)
            self.bytes += len(data)
            while self.bytes > self.max_bytes and events:
                self.bytes -= len(events.popleft())
        for stream in self.streams:
            stream.push(data, last)
        if last:
            self.finished = True
            self.streams = []

    def attach(self, stream: Stream, created: bool) -> tuple[list[bytes], int]:
        """Register a live stream; return (frames to replay first, events lost from replay).

        A stream whose replay lost events is not registered: it can only report that.
        Called synchronously, so no event can slip between the snapshot and the
        registration. The creator of a prediction gets its `start` event even with
        replay disabled, since it was emitted before the stream could attach.
        """
        if self.events is None:
            replay = [self.start] if created and self.start is not None else []
            skipped = 0
        else:
            replay = list(self.events)
            skipped = self.total - len(replay)
        if skipped == 0 and not self.finished:
            self.streams.append(stream)
        return replay, skipped

    def detach(self, stream: Stream) -> None:
        try:
            self.streams.remove(stream)
        except ValueError:
            pass


def history_of(prediction: Prediction) -> EventHistory | None:
    for listener in prediction.listeners:
        if isinstance(listener, EventHistory):
            return listener
    return None
