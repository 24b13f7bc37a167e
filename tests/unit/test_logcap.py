"""A prediction's logs past COGSERVE_LOGS_LIMIT: the first and the last half kept, a
marker saying how much was dropped between them; below the limit, exactly what came."""

from __future__ import annotations

from typing import Any

from cogserve.runtime.logcap import LogCap, marker
from cogserve.runtime.prediction import Prediction
from cogserve.wire.states import Event

from .helpers import run


def _logs_of(lines: list[str], limit: int) -> tuple[str, list[str]]:
    """The prediction's `logs` after these lines, and the log events it announced."""
    async def body() -> tuple[str, list[str]]:
        p = Prediction("p", {}, log_limit=limit)
        seen: list[str] = []

        def listener(_: Prediction, event: Event, payload: dict[str, Any]) -> None:
            if event is Event.LOG:
                seen.append(payload["data"])

        p.subscribe(listener)
        for line in lines:
            p.append_log("stdout", line)
        p.succeed(None, 0.1)
        return p.to_dict()["logs"], seen

    return run(body)


def test_logs_up_to_the_limit_are_kept_whole() -> None:
    lines = [f"line {k}\n" for k in range(10)]  # 70 characters
    assert _logs_of(lines, 70)[0] == "".join(lines)
    assert _logs_of(lines, 0)[0] == "".join(lines)  # 0: no limit


def test_past_the_limit_the_first_and_last_halves_stay_with_a_marker_between() -> None:
    lines = [f"{k:04d}\n" for k in range(1000)]  # 5000 characters
    text = "".join(lines)
    logs, seen = _logs_of(lines, 100)
    assert logs == text[:50] + marker(4900, 100) + text[-50:]
    assert seen == lines  # every line is still announced (SSE, the CLI)


def test_a_line_bigger_than_the_window_keeps_its_end() -> None:
    logs, _ = _logs_of(["a" * 30, "b" * 500, "c" * 10], 100)
    assert logs == "a" * 30 + "b" * 20 + marker(440, 100) + "b" * 40 + "c" * 10


def test_the_window_holds_at_most_twice_its_size_while_lines_come() -> None:
    cap = LogCap(1000, "")
    for k in range(10_000):
        cap.add(f"{k:09d}\n")
        assert cap.tail_chars < 2 * cap.tail_limit
    text = cap.text()
    assert text.endswith("".join(f"{k:09d}\n" for k in range(9950, 10_000)))
    assert marker(100_000 - 500, 1000) in text
    assert len(text) == 500 + len(marker(99_500, 1000))  # no head: it started empty


def test_a_limit_of_one_still_says_what_it_dropped() -> None:
    logs, _ = _logs_of(["xy", "z"], 1)
    assert logs == marker(2, 1) + "z"
