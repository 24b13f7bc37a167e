"""The bound on what one prediction keeps of its logs (`COGSERVE_LOGS_LIMIT`).

A model that prints without end would otherwise grow its prediction's `logs` without
end in the parent, and with it every copy: the sync answer, the stored prediction, each
webhook body and SSE's `completed` event (a `run()` printing 50 MiB made a 52 MB answer
and grew the parent from 38 to 89 MB; the reference keeps everything too). Past the
limit a prediction keeps the first half and the last half of its logs, joined by a line
that says how much was dropped between them. The bound is in characters (bytes, for
ASCII text). The log events themselves (SSE `log` frames, the CLI's stderr) still carry
every line as it comes; only what is kept is bounded.

`Prediction` counts down the room left with one subtraction per line and builds a
`LogCap` only once a prediction goes past it, so predictions below the limit, nearly
all of them, keep their logs as before and pay nothing more.
"""

from __future__ import annotations

from collections import deque

VARIABLE = "COGSERVE_LOGS_LIMIT"
DEFAULT_LIMIT = 1024 * 1024  # characters; 0 keeps everything (as Cog does)
UNLIMITED = 1 << 62  # the room of a limit of 0


def marker(dropped: int, limit: int) -> str:
    """The line that stands where logs were dropped."""
    return (f"\n[cogserve: {dropped} characters of logs dropped here; {VARIABLE}={limit} "
            f"keeps the first and the last {limit // 2}]\n")


class LogCap:
    """A prediction's logs once they went past the limit: the head as it was, and a
    window over the most recent text (at most twice its size while lines come in)."""

    __slots__ = ("head", "limit", "tail", "tail_chars", "tail_limit", "dropped")

    def __init__(self, limit: int, logs: str) -> None:
        """`logs`: the logs so far, the line that went past the limit included."""
        half = limit // 2
        self.limit = limit
        self.head = logs[:half]
        self.tail_limit = limit - half
        self.tail: deque[str] = deque()
        self.tail_chars = 0
        self.dropped = 0  # characters that fell out of the window
        self.add(logs[half:])

    def add(self, data: str) -> None:
        if len(data) >= self.tail_limit:  # it fills the window alone: all before goes
            self.dropped += self.tail_chars + len(data) - self.tail_limit
            self.tail.clear()
            self.tail_chars = 0
            data = data[len(data) - self.tail_limit:]
        self.tail.append(data)
        self.tail_chars += len(data)
        tail = self.tail
        while self.tail_chars - len(tail[0]) >= self.tail_limit:
            self.tail_chars -= len(first := tail.popleft())
            self.dropped += len(first)

    def text(self) -> str:
        tail = "".join(self.tail)
        cut = max(0, len(tail) - self.tail_limit)
        return self.head + marker(self.dropped + cut, self.limit) + tail[cut:]
