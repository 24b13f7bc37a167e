"""Capture everything user code writes and attribute it to the right prediction.

Python-level writes (`print`, `logging`) go through replaced `sys.stdout`/`sys.stderr`
objects that look up the current prediction in a context variable, so with several
async predictions in flight each gets only its own lines. Writes that bypass Python
(C extensions, child processes) land on fd 1/2, which are pipes read by two threads;
those lines go to the single running prediction if there is exactly one, otherwise to
the worker's own log (setup logs during setup).
"""

from __future__ import annotations

import codecs
import contextvars
import io
import os
import select
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

LogSink = Callable[[str, str], None]
# characters of one source held or sent at once: a model that writes without newlines,
# or one huge line, is sent on in pieces of this size, so neither the worker nor a
# frame to the parent grows with it (what the parent keeps is bounded there: logcap)
PIECE = 64 * 1024

_target: contextvars.ContextVar[Any] = contextvars.ContextVar("cogserve_log_target")


class LineBuffer:
    """Collects writes of one source and emits whole lines (the rest on flush)."""

    __slots__ = ("_emit", "_parts", "_pending", "_source")

    def __init__(self, source: str, emit: LogSink) -> None:
        self._source = source
        self._emit = emit
        self._parts: list[str] = []
        self._pending = 0  # characters in _parts

    def write(self, text: str) -> None:
        pending = self._pending + len(text)
        if pending > PIECE:
            self._write_long(text)
            return
        if "\n" not in text:
            self._parts.append(text)
            self._pending = pending
            return
        head, _, tail = text.rpartition("\n")
        self._parts.append(head + "\n")
        data = "".join(self._parts)
        self._parts = [tail] if tail else []
        self._pending = len(tail)
        self._emit(self._source, data)

    def _write_long(self, text: str) -> None:
        """What is held, and this text, would pass PIECE: sent on in pieces of PIECE."""
        self.flush()
        whole = len(text) - len(text) % PIECE
        for start in range(0, whole, PIECE):
            self._emit(self._source, text[start:start + PIECE])
        if whole < len(text):
            self.write(text[whole:])

    def flush(self) -> None:
        if self._parts:
            data = "".join(self._parts)
            self._parts = []
            self._pending = 0
            self._emit(self._source, data)


class LogTarget:
    """Where one prediction's (or setup's) output goes: a line buffer per source.

    One is made per prediction and most predictions write nothing, so each source's
    buffer is made on its first write and a flush passes over what was never made.
    """

    __slots__ = ("_emit", "lock", "stderr", "stdout")

    def __init__(self, emit: LogSink) -> None:
        self.lock = threading.Lock()
        self._emit = emit
        self.stdout: LineBuffer | None = None
        self.stderr: LineBuffer | None = None

    def write(self, source: str, text: str) -> None:
        with self.lock:
            if source == "stdout":
                buffer = self.stdout
                if buffer is None:
                    buffer = self.stdout = LineBuffer("stdout", self._emit)
            else:
                buffer = self.stderr
                if buffer is None:
                    buffer = self.stderr = LineBuffer("stderr", self._emit)
            buffer.write(text)

    def flush(self) -> None:
        with self.lock:
            if self.stdout is not None:
                self.stdout.flush()
            if self.stderr is not None:
                self.stderr.flush()


class LogRouter:
    """Decides the LogTarget for a write; owns the fallback (worker-level) target and the
    drains of fd 1/2 (`capture_output`), which `settle` waits for."""

    def __init__(self, fallback: LogTarget) -> None:
        self.fallback = fallback
        self.active: dict[str, LogTarget] = {}
        self.drains: list[_Drain] = []
        self._readable = select.poll()  # the drains' pipes: is output waiting in them?
        # one poll() at a time: a poll object refuses a second caller ("concurrent poll()
        # invocation"), and predictions end on two threads in a sync @batch worker (its
        # read-ahead thread) and in an async one (inputs prepared in the executor)
        self._poll_lock = threading.Lock()
        self._lock = threading.Lock()

    def add_drain(self, drain: _Drain) -> None:
        self.drains.append(drain)
        self._readable.register(drain.fd, select.POLLIN)

    def bind(self, key: str, target: LogTarget) -> contextvars.Token[Any]:
        with self._lock:
            self.active[key] = target
        return _target.set(target)

    def unbind(self, key: str, token: contextvars.Token[Any] | None) -> None:
        with self._lock:
            self.active.pop(key, None)
        if token is not None:
            try:
                _target.reset(token)
            except ValueError:  # reset from another context: harmless
                pass

    def current(self) -> LogTarget:
        target: LogTarget | None = _target.get(None)
        if target is not None:
            return target
        return self.unattributed()

    def unattributed(self) -> LogTarget:
        """For writes with no context: the only running prediction, else the fallback."""
        active = self.active
        if len(active) == 1:
            try:
                return next(iter(active.values()))
            except (StopIteration, RuntimeError):
                pass
        return self.fallback

    def settle(self, timeout: float = 0.2) -> bool:
        """Wait until fd 1/2 output written so far has been routed; True if there was some.

        Called before a prediction's terminal message: a C extension or a child process that
        writes just before run() returns would otherwise race the drain thread, and its lines
        would land in the server log instead of the prediction's logs. When nothing is
        pending this is one poll() of both pipes (not an ioctl per pipe: one system call
        instead of two, ~1k instructions instead of ~14k). Read order (pending, busy,
        cycles) can only overestimate the rounds to wait for, which the timeout bounds.
        """
        waited = False
        deadline = 0.0
        if self.drains:
            with self._poll_lock:
                readable = self._readable.poll(0)
        else:
            readable = []
        for drain in self.drains:
            pending = bool(readable) and any(fd == drain.fd and events & select.POLLIN
                                             for fd, events in readable)
            busy = drain.busy
            if not pending and not busy:
                continue
            target = drain.cycles + busy + pending
            waited = True
            deadline = deadline or time.monotonic() + timeout
            while drain.cycles < target and time.monotonic() < deadline:
                time.sleep(0.0002)
        return waited


class RoutedStream(io.TextIOBase):
    """Stands in for sys.stdout / sys.stderr."""

    def __init__(self, source: str, router: LogRouter) -> None:
        self._source = source
        self._router = router

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if text:
            self._router.current().write(self._source, text)
        return len(text)

    def flush(self) -> None:
        return None

    def fileno(self) -> int:
        return 1 if self._source == "stdout" else 2


class _Drain:
    """One fd pipe and the thread that empties it; `settle` waits for it to catch up."""

    __slots__ = ("busy", "cycles", "fd")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.busy = False  # set before a read, cleared once the text is routed
        self.cycles = 0  # completed read-and-route rounds


def capture_output(router: LogRouter) -> None:
    """Point fd 1/2 at pipes drained by threads, and replace sys.stdout/sys.stderr."""
    for fd, source in ((1, "stdout"), (2, "stderr")):
        read_end, write_end = os.pipe()
        os.dup2(write_end, fd)
        os.close(write_end)
        drain = _Drain(read_end)
        router.add_drain(drain)
        thread = threading.Thread(
            target=_drain, args=(drain, source, router), name=f"cogserve-{source}",
            daemon=True,
        )
        thread.start()
    sys.stdout = RoutedStream("stdout", router)
    sys.stderr = RoutedStream("stderr", router)


def _drain(drain: _Drain, source: str, router: LogRouter) -> None:
    utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
    poller = select.poll()
    poller.register(drain.fd, select.POLLIN)
    while True:
        poller.poll()  # readable (or closed): only then busy, so idle means not busy
        drain.busy = True
        try:
            chunk = os.read(drain.fd, 65536)
        except OSError:
            return
        if not chunk:
            return
        text = utf8.decode(chunk)
        if text:
            router.unattributed().write(source, text)
        drain.busy = False
        drain.cycles += 1
