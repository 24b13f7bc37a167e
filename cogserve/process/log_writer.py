"""The log handler of the cogserve process: INFO lines formatted and written on a thread.

Every request writes an access line at INFO. Formatted and written where it is logged,
that line costs the event loop a format and a write() system call per request, paid
before the loop can read the next one. Here the loop only appends the record to a
queue; a writer thread formats what has gathered and writes it with one call, at most
every `BATCH_DELAY` seconds (20 ms), mostly while the loop waits for a worker anyway.

Records at WARNING and above are written at once, after whatever is queued (so lines
keep their order): a failure is never held back, and never lost when the process dies
right after it. `flush()` (which `logging.shutdown` calls at exit) writes everything
queued before it returns.

A line logged on every request (the access line) can skip even the record: `sole_handler`
says when a logger's INFO records reach this handler and nothing else (no filter on the
way), and `defer` then queues a function and its arguments, which the writer thread calls
with the handler's formatter to render the line: the line the record would be formatted
into (the same record, with the time it was logged), made by the writer, not the loop.
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

# seconds the writer waits after a first line for others to join it: each wake-up costs
# CPU of its own (system calls, the GIL taken from the event loop). Its thread's CPU per
# line, one sequential client at 1,500-3,500 requests/s on a loaded 2-core machine: 5 ms
# 6.9-12.1 us, 20 ms 4.9-6.5 us, 50 ms 4.3-5.6 us
BATCH_DELAY = 0.02


# a line below WARNING for the writer thread to render: a function and its arguments; it is
# called with the handler's formatter first and gives the formatted line
Deferred = tuple[Callable[..., str], tuple[Any, ...]]


class BackgroundLogHandler(logging.Handler):
    """Writes formatted records to `stream`; below WARNING, from a daemon thread."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream
        self._queue: collections.deque[logging.LogRecord | Deferred] = collections.deque()
        # the writer thread's wake-ups: a token is put each time `_pending` turns true (so
        # none is lost: a record queued after the writer took its token and before it
        # reset `_pending` is written by the write that follows the reset), and taken by
        # a get() that blocks in C (an Event's wait is a Condition's, in Python)
        self._pending = False
        self._tokens: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._write_lock = threading.Lock()  # one writer at a time; keeps lines whole
        self._thread: threading.Thread | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self._write([record])
            return
        self._queue.append(record)
        if not self._pending:
            self._wake()

    def defer(self, render: Callable[..., str], args: tuple[Any, ...]) -> None:
        """Queue a line below WARNING that the writer thread renders, `render(formatter,
        *args)` (what `emit` does with a record made already: `render` gives the line the
        formatter makes of its record); for a logger whose `sole_handler` this is."""
        self._queue.append((render, args))
        if not self._pending:
            self._wake()

    def _wake(self) -> None:
        if self._thread is None:
            self._start()
        self._pending = True
        self._tokens.put(None)

    def flush(self) -> None:
        self._write([])

    def close(self) -> None:
        self.flush()
        super().close()

    def _start(self) -> None:
        # started on the first queued record, so a process that never logs at INFO
        # (or a forked child that inherits the handler) runs no thread for it
        self._thread = threading.Thread(target=self._run, name="cogserve-log-writer",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            self._tokens.get()
            time.sleep(BATCH_DELAY)
            self._pending = False  # a record queued from here on puts a token again
            self._write([])

    def _write(self, then: list[logging.LogRecord]) -> None:
        """Write the queued records, then `then`, in one write() and one flush()."""
        with self._write_lock:
            queue = self._queue
            records = [queue.popleft() for _ in range(len(queue))]
            records += then
            if not records:
                return
            lines = []
            formatter = self.formatter or _DEFAULT_FORMATTER
            for item in records:
                try:
                    if isinstance(item, tuple):
                        lines.append(item[0](formatter, *item[1]))
                    else:
                        lines.append(self.format(item))
                except Exception:  # noqa: BLE001 - as logging does: report, go on
                    self.handleError(_reported(item))
            if not lines:
                return
            try:
                self.stream.write("\n".join(lines) + "\n")
                self.stream.flush()
            except Exception:  # noqa: BLE001
                self.handleError(_reported(records[-1]))


_DEFAULT_FORMATTER = logging.Formatter()  # what Handler.format uses without a formatter


def _reported(item: logging.LogRecord | Deferred) -> logging.LogRecord:
    """The record `handleError` reports: a deferred line's own is not made."""
    if isinstance(item, logging.LogRecord):
        return item
    return logging.makeLogRecord({"msg": "a deferred log line (%r)", "args": (item[0],)})


def sole_handler(logger: logging.Logger, level: int) -> BackgroundLogHandler | None:
    """The BackgroundLogHandler that a record of `level` logged on `logger` reaches, when
    it reaches that handler only, through no filter (what `Logger.handle` would do with it
    is then `handler.emit`); else None.

    Asked per record, so it looks at the one shape `cogserve serve` sets up (a logger
    with no handler of its own under the `cogserve` logger, which holds the handler and
    does not propagate) and says None to anything else."""
    if logger.handlers or logger.filters or logger.disabled or not logger.propagate:
        return None
    parent = logger.parent
    if parent is None or parent.propagate:
        return None
    handlers = parent.handlers
    if len(handlers) != 1:
        return None
    handler = handlers[0]
    if type(handler) is not BackgroundLogHandler or handler.filters or level < handler.level \
            or level >= logging.WARNING:
        return None
    return handler
