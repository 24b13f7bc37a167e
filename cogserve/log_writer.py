"""The log handler of the cogserve process: INFO lines formatted and written on a thread.

Every request writes an access line at INFO. Formatted and written where it is logged,
that line costs the event loop a format and a write() system call per request, paid
before the loop can read the next one. Here the loop only appends the record to a
queue; a writer thread formats what has gathered and writes it with one call, at most
every `BATCH_DELAY` seconds, mostly while the loop waits for a worker anyway.

Records at WARNING and above are written at once, after whatever is queued (so lines
keep their order): a failure is never held back, and never lost when the process dies
right after it. `flush()` (which `logging.shutdown` calls at exit) writes everything
queued before it returns.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from typing import TextIO

BATCH_DELAY = 0.005  # seconds the writer waits after a first line for others to join it


class BackgroundLogHandler(logging.Handler):
    """Writes formatted records to `stream`; below WARNING, from a daemon thread."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream
        self._queue: collections.deque[logging.LogRecord] = collections.deque()
        self._wake = threading.Event()
        self._write_lock = threading.Lock()  # one writer at a time; keeps lines whole
        self._thread: threading.Thread | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self._write([record])
            return
        self._queue.append(record)
        if not self._wake.is_set():
            if self._thread is None:
                self._start()
            self._wake.set()

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
            self._wake.wait()
            time.sleep(BATCH_DELAY)
            self._wake.clear()  # a record queued from here on sets it again
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
            for record in records:
                try:
                    lines.append(self.format(record))
                except Exception:  # noqa: BLE001 - as logging does: report, go on
                    self.handleError(record)
            if not lines:
                return
            try:
                self.stream.write("\n".join(lines) + "\n")
                self.stream.flush()
            except Exception:  # noqa: BLE001
                self.handleError(records[-1])
