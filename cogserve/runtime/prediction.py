"""One prediction's state machine, and the single place its changes are announced.

starting -> processing -> succeeded | failed | canceled (`Status`). Every change is
one `Event` passed to each listener (the webhook sender, SSE streams); the sync HTTP
waiter awaits `done`. The status changes only through the methods below, and nothing
else mutates a prediction, so every observer sees the same history in the same order.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, overload

import orjson

from cogserve.runtime.logcap import DEFAULT_LIMIT, UNLIMITED, LogCap
from cogserve.sdk.custom_metrics import apply_metric
from cogserve.wire import jsoncodec
from cogserve.wire.states import TERMINAL, Event, Status, WebhookEvent

if TYPE_CHECKING:
    from cogserve.runtime.pool import Slot

# (event, payload): see `Event` for each event's payload
Listener = Callable[["Prediction", Event, dict[str, Any]], None]


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def iso(ts: datetime.datetime | None) -> str | None:
    return ts.isoformat() if ts is not None else None


# A prediction's three times are kept as whole microseconds since the epoch (UTC): what
# `datetime.now(UTC)` reads (the system clock, floored to the microsecond), without
# building a datetime (~4k instructions) and formatting it with its UTC offset (~13k) three
# times per prediction. The datetimes are made when asked for (`created_at`, ...); the
# ISO strings are the same as `isoformat()` gives, their seconds formatted once per second.
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_MICROSECOND = datetime.timedelta(microseconds=1)
# looked up once: `Event.X` goes through the enum's class lookup each time (~75 ns on
# Python 3.11), once per streamed token, log line and metric
_START, _LOG, _OUTPUT, _METRIC, _COMPLETED = (
    Event.START, Event.LOG, Event.OUTPUT, Event.METRIC, Event.COMPLETED)
_STARTING, _PROCESSING = Status.STARTING, Status.PROCESSING
_second: tuple[int, str] = (-1, "")  # the last second formatted: (seconds, "YYYY-MM-DDTHH:MM:SS")


def now_us() -> int:
    """Now, in whole microseconds since the epoch, as `datetime.now(UTC)` reads it."""
    return time.time_ns() // 1000


def datetime_of(us: int | None) -> datetime.datetime | None:
    """The UTC datetime `us` microseconds after the epoch (exact)."""
    return None if us is None else _EPOCH + datetime.timedelta(microseconds=us)


def us_of(ts: datetime.datetime | None) -> int | None:
    """A datetime as microseconds since the epoch (exact; naive is taken as UTC)."""
    if ts is None:
        return None
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=datetime.UTC)
    return (ts - _EPOCH) // _MICROSECOND


def iso_us(us: int | None) -> str | None:
    """`datetime_of(us).isoformat()`: `2026-11-24T20:52:53.436075+00:00` (no fraction at
    a whole second)."""
    global _second
    if us is None:
        return None
    seconds, micros = divmod(us, 1_000_000)
    cached, stamp = _second
    if cached != seconds:
        stamp = (_EPOCH + datetime.timedelta(seconds=seconds)).replace(tzinfo=None).isoformat()
        _second = (seconds, stamp)
    return f"{stamp}.{micros:06d}+00:00" if micros else f"{stamp}+00:00"


class _Instant:
    """`started_at` / `completed_at`: the datetime of a microseconds slot (None while it
    is None), read and written as a datetime; the slot is what the hot path keeps."""

    __slots__ = ("slot",)

    def __init__(self, slot: str) -> None:
        self.slot = slot

    @overload
    def __get__(self, obj: None, owner: type) -> _Instant: ...

    @overload
    def __get__(self, obj: Prediction, owner: type) -> datetime.datetime | None: ...

    def __get__(self, obj: Prediction | None, owner: type) -> Any:
        return self if obj is None else datetime_of(getattr(obj, self.slot))

    def __set__(self, obj: Prediction, value: datetime.datetime | None) -> None:
        setattr(obj, self.slot, us_of(value))


class Prediction:
    __slots__ = (
        "id", "kind", "input", "status", "output", "_outputs", "iterator", "_logs", "error",
        "metrics", "created_us", "started_us", "completed_us", "predict_time", "webhook",
        "webhook_events_filter", "output_file_prefix", "listeners", "done", "tail",
        "context", "cancel_requested", "slot", "timeout", "deadline", "deadline_passed",
        "expired", "_final_json", "_log_room", "_log_cap", "_start_announced",
    )

    def __init__(
        self,
        prediction_id: str,
        redacted_input: dict[str, Any],
        *,
        kind: str = "prediction",
        iterator: bool = False,
        webhook: str | None = None,
        webhook_events_filter: frozenset[WebhookEvent] | None = None,
        output_file_prefix: str | None = None,
        context: dict[str, str] | None = None,
        log_limit: int = DEFAULT_LIMIT,
    ) -> None:
        """`log_limit`: the most characters of logs kept (`runtime/logcap.py`); 0: all."""
        self.id = prediction_id
        self.kind = kind
        self.input = redacted_input
        self.status = Status.STARTING
        self.output: Any = None
        self._outputs: list[Any] = []
        self.iterator = iterator
        self._logs: list[str] = []
        self._log_room = log_limit or UNLIMITED  # characters left before the cap applies
        self._log_cap: LogCap | None = None  # past it: the head and the recent tail
        self.error: str | None = None
        self.metrics: dict[str, Any] = {}
        self.created_us = now_us()  # microseconds since the epoch (`created_at`)
        self.started_us: int | None = None
        self._start_announced = False  # its `start` event went out (once, however often sent)
        self.completed_us: int | None = None
        self.predict_time: float | None = None
        self.webhook = webhook
        self.webhook_events_filter = webhook_events_filter
        self.output_file_prefix = output_file_prefix
        self.listeners: list[Listener] = []
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.tail: asyncio.Task[None] | None = None  # serialises slow (file) events
        self.context = context or {}  # trace headers and such, passed on to webhooks
        self.cancel_requested = False
        self.slot: Slot | None = None  # the worker slot it holds (runtime/pool.py); None: queued
        self.timeout: float | None = None  # seconds it may run (--predict-timeout, per request)
        self.deadline: asyncio.TimerHandle | None = None
        self.deadline_passed = False  # its deadline fired and cancelled it
        self.expired = False  # it ended failed because of that (see `expire`)
        self._final_json: bytes | None = None

    # ------------------------------------------------------------ reading

    @property
    def created(self) -> float:
        """When it was made, in epoch seconds: the prediction store's sort key."""
        return self.created_us / 1_000_000

    @property
    def created_at(self) -> datetime.datetime:
        return _EPOCH + datetime.timedelta(microseconds=self.created_us)

    @created_at.setter
    def created_at(self, value: datetime.datetime) -> None:
        self.created_us = (value - _EPOCH) // _MICROSECOND

    started_at = _Instant("started_us")
    completed_at = _Instant("completed_us")

    def queue_wait(self) -> float | None:
        """Seconds from its creation to its start (`(started_at - created_at)
        .total_seconds()`), None before it started."""
        started = self.started_us
        return None if started is None else (started - self.created_us) / 1_000_000

    @property
    def logs(self) -> str:
        if self._log_cap is not None:
            return self._log_cap.text()
        if len(self._logs) > 1:
            self._logs = ["".join(self._logs)]
        return self._logs[0] if self._logs else ""

    @property
    def logs_capped(self) -> bool:
        """Its logs went past the limit: it keeps their head and tail only."""
        return self._log_cap is not None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def current_output(self) -> Any:
        """What the prediction has produced; none once it failed, as the reference
        reports a failure (without the output an iterator yielded before it)."""
        if self.status is Status.FAILED:
            return None
        return list(self._outputs) if self.iterator else self.output

    def to_dict(self) -> dict[str, Any]:
        metrics = dict(self.metrics)
        if self.predict_time is not None:
            metrics["predict_time"] = self.predict_time
        logs = self._logs  # `logs` and `current_output()`, without the two calls
        status = self.status
        return {
            "id": self.id,
            "status": status,
            "input": self.input,
            "output": None if status is Status.FAILED else
            list(self._outputs) if self.iterator else self.output,
            "logs": self.logs if self._log_cap is not None or len(logs) > 1 else
            logs[0] if logs else "",
            "error": self.error,
            "metrics": metrics,
            "created_at": iso_us(self.created_us),
            "started_at": iso_us(self.started_us),
            "completed_at": iso_us(self.completed_us),
        }

    def encoded(self) -> bytes:
        """`to_dict()` as JSON. A finished prediction never changes again, so its final
        JSON is encoded once and the same bytes serve everyone who sends it: SSE's
        `completed` event, the stored answer (`GET`, retried `PUT`, the sync response)
        and the `completed` webhook."""
        if not self.terminal:
            return orjson.dumps(self.to_dict())
        if self._final_json is None:
            doc = self.to_dict()
            output = doc["output"]
            self._final_json = (jsoncodec.dumps_text(doc)
                                if jsoncodec.long_text(self.input.values())
                                or isinstance(output, str) and len(output) >= jsoncodec.LARGE
                                else orjson.dumps(doc))
        return self._final_json

    # ------------------------------------------------------------ changing

    def _emit(self, event: Event, payload: dict[str, Any]) -> None:
        for listener in self.listeners:
            listener(self, event, payload)

    def subscribe(self, listener: Listener) -> None:
        self.listeners.append(listener)

    def mark_started(self) -> None:
        """Sent to the worker: the `start` event (status still `starting`, as Cog reports),
        announced once even when it is sent again (`mark_waiting_again`)."""
        self.started_us = now_us()
        if not self._start_announced:
            self._start_announced = True
            self._emit(_START, {})

    def mark_waiting_again(self) -> None:
        """Taken back from a worker that died before it began (a batch sent ahead): it
        waits again, and its next delivery starts it anew."""
        self.started_us = None
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def mark_processing(self) -> None:
        """The worker reported something: it is running (no event, as in Cog)."""
        if self.status is _STARTING:
            self.status = _PROCESSING

    def request_cancel(self) -> bool:
        """Note a cancel; False if one was requested already."""
        if self.cancel_requested:
            return False
        self.cancel_requested = True
        return True

    def append_log(self, source: str, data: str) -> None:
        """Every line is announced; what is kept is bounded (`runtime/logcap.py`)."""
        self._log_room -= len(data)
        if self._log_room >= 0:
            self._logs.append(data)
        elif self._log_cap is None:  # the limit: what is kept and what room was left
            kept = "".join(self._logs)
            self._log_cap = LogCap(len(kept) + self._log_room + len(data), kept + data)
            self._logs = []
        else:
            self._log_cap.add(data)
        self._emit(_LOG, {"source": source, "data": data})

    def append_output(self, chunk: Any) -> None:
        index = len(self._outputs)
        self._outputs.append(chunk)
        self._emit(_OUTPUT, {"chunk": chunk, "index": index})

    def record_metric(self, name: str, value: Any, mode: str) -> None:
        try:
            apply_metric(self.metrics, name, value, mode)
        except (TypeError, ValueError):
            return  # the worker already raised this inside the model
        self._emit(_METRIC, {"name": name, "value": value, "mode": mode})

    def succeed(self, output: Any, predict_time: float | None) -> None:
        if self.terminal:  # a settled prediction keeps its output
            return
        if not self.iterator:
            self.output = output
        self._finish(Status.SUCCEEDED, predict_time)

    def fail(self, error: str, predict_time: float | None = None) -> None:
        if self.terminal:  # ... and its error
            return
        self.error = error
        self._finish(Status.FAILED, predict_time)

    def cancel(self, predict_time: float | None = None) -> None:
        self._finish(Status.CANCELED, predict_time)

    def expire(self, predict_time: float | None = None) -> None:
        """Cancelled because it ran past its deadline: failed, naming the deadline, and
        marked `expired` so a front end can answer it as a timeout (V2: 503, as Triton)."""
        if self.terminal:
            return
        self.expired = True
        self.error = f"prediction exceeded its deadline of {self.timeout:g} seconds"
        self._finish(Status.FAILED, predict_time)

    def _finish(self, status: Status, predict_time: float | None) -> None:
        if self.terminal:
            return
        self.status = status
        self.completed_us = completed = now_us()
        if predict_time is None and self.started_us is not None:
            predict_time = (completed - self.started_us) / 1_000_000
        self.predict_time = predict_time
        self._emit(_COMPLETED, {})
        if not self.done.done():
            self.done.set_result(None)
