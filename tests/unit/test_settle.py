"""LogRouter.settle: output waiting in a drained pipe is noticed (one poll of the pipes)."""

from __future__ import annotations

import os

from cogserve.worker.logs import LogRouter, LogTarget, _Drain


def test_settle_sees_output_waiting_in_a_pipe() -> None:
    router = LogRouter(LogTarget(lambda *_: None))
    read_end, write_end = os.pipe()
    other_read, other_write = os.pipe()
    try:
        router.add_drain(_Drain(read_end))
        router.add_drain(_Drain(other_read))
        assert router.settle(timeout=0.01) is False  # nothing written: no wait
        os.write(write_end, b"line\n")  # written, not drained (no thread here)
        assert router.settle(timeout=0.01) is True  # waited, up to the timeout
    finally:
        for fd in (read_end, write_end, other_read, other_write):
            os.close(fd)


def test_settle_without_drains() -> None:
    assert LogRouter(LogTarget(lambda *_: None)).settle() is False
