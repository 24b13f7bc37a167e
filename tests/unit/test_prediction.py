"""The prediction state machine: statuses move only forward, every change is one event."""

from __future__ import annotations

from typing import Any

from cogserve.runtime.prediction import Prediction
from cogserve.wire.states import Event, Status

from .helpers import run


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[Event, dict[str, Any], Status]] = []

    def __call__(self, prediction: Prediction, event: Event, payload: dict[str, Any]) -> None:
        self.events.append((event, payload, prediction.status))


def test_a_successful_run_announces_each_change_in_order() -> None:
    async def body() -> None:
        p = Prediction("p1", {"text": "hi"}, iterator=True)
        seen = Recorder()
        p.subscribe(seen)
        assert p.status is Status.STARTING and not p.done.done()
        p.mark_started()
        p.mark_processing()
        p.append_log("stdout", "one\n")
        p.append_output("a")
        p.append_output("b")
        p.record_metric("tokens", 2, "replace")
        p.succeed(None, 0.25)
        assert [e for e, _, _ in seen.events] == [Event.START, Event.LOG, Event.OUTPUT,
                                                  Event.OUTPUT, Event.METRIC, Event.COMPLETED]
        assert seen.events[0][2] is Status.STARTING  # `start` is sent while still starting
        assert seen.events[3][1] == {"chunk": "b", "index": 1}
        assert seen.events[-1][2] is Status.SUCCEEDED
        assert p.done.done() and p.terminal
        doc = p.to_dict()
        assert doc["status"] == "succeeded" and doc["output"] == ["a", "b"]
        assert doc["logs"] == "one\n" and doc["metrics"] == {"tokens": 2, "predict_time": 0.25}

    run(body)


def test_a_terminal_status_is_final() -> None:
    async def body() -> None:
        p = Prediction("p1", {})
        seen = Recorder()
        p.subscribe(seen)
        p.fail("boom")
        p.succeed("late", 1.0)
        p.cancel()
        p.mark_processing()
        assert p.status is Status.FAILED and p.error == "boom" and p.output is None
        assert [e for e, _, _ in seen.events] == [Event.COMPLETED]

    run(body)


def test_processing_follows_starting_only() -> None:
    async def body() -> None:
        p = Prediction("p1", {})
        p.mark_processing()
        assert p.status is Status.PROCESSING
        p.cancel()
        p.mark_processing()
        assert p.status is Status.CANCELED

    run(body)


def test_a_cancel_is_requested_once() -> None:
    async def body() -> None:
        p = Prediction("p1", {})
        assert p.request_cancel() is True
        assert p.request_cancel() is False
        assert p.cancel_requested

    run(body)


def test_predict_time_defaults_to_the_time_since_start() -> None:
    async def body() -> None:
        p = Prediction("p1", {})
        p.mark_started()
        p.succeed("x", None)
        assert p.predict_time is not None and p.predict_time >= 0
        assert p.to_dict()["metrics"]["predict_time"] == p.predict_time

    run(body)
