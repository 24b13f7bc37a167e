"""The file-input downloads of one prediction, stopped together on cancel or deadline.

A download runs in a pool thread blocked in `recv`, which neither a cancel signal nor
`task.cancel()` interrupts: a cancel used to take effect only when the download ended
(a URL streaming zeros filled 1.8 GB of temp space first). Each download's sockets are
registered here, and `stop()` shuts them down, which wakes the blocked `recv` at once;
the copy loop then sees why and raises. A timer stops them the same way when the
prediction's downloads together pass COGSERVE_DOWNLOAD_DEADLINE.

Standard library only and no urllib: every worker imports this module.
"""

from __future__ import annotations

import enum
import socket
import threading


class StopReason(enum.Enum):
    CANCEL = "the prediction was canceled"
    DEADLINE = "the downloads took longer than COGSERVE_DOWNLOAD_DEADLINE"


class Transfers:
    def __init__(self) -> None:
        self.stopped: StopReason | None = None
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def start_clock(self, deadline: float) -> None:
        """Stop the downloads `deadline` seconds from now (0: never); the worker's Fetcher
        holds COGSERVE_DOWNLOAD_DEADLINE."""
        if deadline > 0 and self._timer is None:
            self._timer = threading.Timer(deadline, self.stop, (StopReason.DEADLINE,))
            self._timer.daemon = True
            self._timer.start()

    def finish(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def add(self, sock: socket.socket) -> None:
        with self._lock:
            if self.stopped is None:
                self._sockets.add(sock)
                return
        _shutdown(sock)  # stopped while it was connecting

    def discard(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)

    def stop(self, reason: StopReason) -> None:
        with self._lock:
            if self.stopped is not None:
                return
            self.stopped = reason
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            _shutdown(sock)
        self.finish()


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


# The Transfers of the download running in this thread, for the connection class.
current = threading.local()
