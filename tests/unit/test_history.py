"""The SSE event history: frames encoded once, a bounded replay, live fan-out."""

from __future__ import annotations

from typing import Any

from cogserve.runtime.history import EventHistory
from cogserve.runtime.prediction import Prediction

from .helpers import run


class Stream:
    def __init__(self) -> None:
        self.frames: list[tuple[bytes, bool]] = []

    def push(self, frame: bytes, last: bool) -> None:
        self.frames.append((frame, last))


def streaming(capacity: int) -> tuple[Prediction, EventHistory]:
    p = Prediction("p1", {}, iterator=True)
    history = EventHistory(capacity)
    p.subscribe(history)
    return p, history


def test_frames_are_the_reference_bytes() -> None:
    async def body() -> None:
        p, history = streaming(16)
        p.mark_started()
        p.append_output("tok")
        p.append_log("stdout", "hi\n")
        p.record_metric("n", 1, "replace")
        replay, skipped = history.attach(Stream(), created=False)
        assert skipped == 0
        assert replay == [
            b'event: start\ndata: {"id":"p1","status":"processing"}\n\n',
            b'event: output\ndata: {"chunk":"tok","index":0}\n\n',
            b'event: log\ndata: {"data":"hi\\n","source":"stdout"}\n\n',
            b'event: metric\ndata: {"mode":"replace","name":"n","value":1}\n\n',
        ]

    run(body)


def test_a_live_stream_gets_each_frame_once_after_its_replay() -> None:
    async def body() -> None:
        p, history = streaming(16)
        p.mark_started()
        stream = Stream()
        replay, _ = history.attach(stream, created=True)
        p.append_output("a")
        p.succeed(None, 0.1)
        assert len(replay) == 1 and replay[0].startswith(b"event: start")
        assert [f.split(b"\n")[0] for f, _ in stream.frames] == [b"event: output",
                                                                  b"event: completed"]
        assert [last for _, last in stream.frames] == [False, True]
        assert history.finished and history.streams == []

    run(body)


def test_a_replay_that_lost_events_says_how_many_and_does_not_attach() -> None:
    async def body() -> None:
        p, history = streaming(2)
        p.mark_started()
        for i in range(4):
            p.append_output(str(i))
        stream = Stream()
        replay, skipped = history.attach(stream, created=False)
        assert skipped == 3 and len(replay) == 2
        assert stream not in history.streams

    run(body)


def test_the_replay_is_bounded_by_bytes_too() -> None:
    """Big chunks fill the byte bound long before the event capacity (defect 10 of #13)."""
    async def body() -> None:
        p = Prediction("p1", {}, iterator=True)
        history = EventHistory(1024, max_bytes=10_000)
        p.subscribe(history)
        p.mark_started()
        for _ in range(100):
            p.append_output("x" * 1000)
        kept = list(history.events or ())
        assert sum(map(len, kept)) == history.bytes <= 10_000
        assert 0 < len(kept) < 10
        replay, skipped = history.attach(Stream(), created=False)
        assert replay == kept and skipped == 101 - len(kept)

    run(body)


def test_a_frame_bigger_than_the_byte_bound_is_sent_live_but_not_kept() -> None:
    async def body() -> None:
        p = Prediction("p1", {}, iterator=True)
        history = EventHistory(1024, max_bytes=100)
        p.subscribe(history)
        stream = Stream()
        history.attach(stream, created=True)
        p.mark_started()
        p.append_output("x" * 1000)
        assert len(stream.frames) == 2 and len(stream.frames[1][0]) > 1000
        assert history.bytes == sum(map(len, history.events or ())) <= 100

    run(body)


def test_capacity_zero_keeps_only_the_creators_start() -> None:
    async def body() -> None:
        p, history = streaming(0)
        p.mark_started()
        p.append_output("a")
        assert history.attach(Stream(), created=True)[0][0].startswith(b"event: start")
        assert history.attach(Stream(), created=False) == ([], 0)

    run(body)


def test_detach_stops_the_fan_out() -> None:
    async def body() -> None:
        p, history = streaming(8)
        stream = Stream()
        history.attach(stream, created=False)
        history.detach(stream)
        history.detach(stream)
        p.append_output("a")
        assert stream.frames == []

    run(body)


def test_completed_carries_the_final_prediction() -> None:
    async def body() -> None:
        p, history = streaming(8)
        p.fail("boom")
        frame: Any = history.events[-1] if history.events else b""
        assert frame.startswith(b"event: completed\ndata: {")
        assert b'"status":"failed"' in frame and b'"error":"boom"' in frame

    run(body)


def test_the_final_json_is_encoded_once_for_the_stream_and_the_store() -> None:
    from cogserve.runtime.store.cache import RecentCache

    async def body() -> None:
        p, history = streaming(16)
        store = RecentCache()
        p.subscribe(store.listener)
        stream = Stream()
        history.attach(stream, created=True)
        p.append_output("a")
        assert p.encoded() is not p.encoded()  # still running: each call is the state now
        p.succeed(None, 0.1)
        completed, _ = stream.frames[-1]
        entry = store.get("p1", "prediction")
        assert entry is not None
        assert completed == b"event: completed\ndata: " + entry.body + b"\n\n"
        assert p.encoded() is entry.body  # the same bytes object: encoded once
        assert b'"output":["a"]' in entry.body and b'"status":"succeeded"' in entry.body

    run(body)


def test_log_lines_past_the_predictions_log_limit_go_live_but_are_not_kept() -> None:
    async def body() -> None:
        p = Prediction("p1", {}, iterator=True, log_limit=10)
        history = EventHistory(1024)
        p.subscribe(history)
        live = Stream()
        history.attach(live, created=True)
        p.mark_started()
        for k in range(5):
            p.append_log("stdout", f"line{k}\n")  # 6 characters each: the 2nd passes 10
        p.append_output("tok")
        assert len(live.frames) == 7  # start, 5 lines, the output: every one told
        replay, skipped = history.attach(Stream(), created=False)
        assert skipped == 4  # lines 1..4 were not kept
        kept = list(history.events or ())
        assert [f for f in kept if f.startswith(b"event: log")] == [
            b'event: log\ndata: {"data":"line0\\n","source":"stdout"}\n\n']
        assert history.bytes == sum(map(len, kept))

    run(body)
