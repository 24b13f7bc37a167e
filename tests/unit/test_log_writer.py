"""The server's log handler: INFO lines written by a thread, in order, whole, never lost."""

from __future__ import annotations

import io
import logging
import threading
import time

from cogserve.process.log_writer import BackgroundLogHandler


class Stream(io.StringIO):
    """Counts write() calls, to show that queued lines leave in one."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.writer_threads: set[str] = set()

    def write(self, text: str) -> int:
        self.writes += 1
        self.writer_threads.add(threading.current_thread().name)
        return super().write(text)


def _logger(stream: Stream) -> tuple[logging.Logger, BackgroundLogHandler]:
    handler = BackgroundLogHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger = logging.Logger(f"test-{id(stream)}", logging.DEBUG)  # not in the global tree
    logger.addHandler(handler)
    return logger, handler


def _wait_for(condition: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.001)


def test_info_lines_are_written_by_the_thread_in_one_write() -> None:
    stream = Stream()
    logger, handler = _logger(stream)
    for n in range(50):
        logger.info("line %d", n)
    _wait_for(lambda: stream.getvalue().count("\n") == 50)
    assert stream.getvalue().splitlines() == [f"INFO line {n}" for n in range(50)]
    assert stream.writes < 50  # batched: 50 lines logged at once take a write or two
    assert stream.writer_threads == {"cogserve-log-writer"}
    handler.close()


def test_a_warning_is_written_at_once_after_the_lines_queued_before_it() -> None:
    stream = Stream()
    logger, handler = _logger(stream)
    logger.info("first")
    logger.debug("second")
    logger.warning("third")
    # written by the caller before warning() returned: no waiting for the thread
    assert stream.getvalue().splitlines() == ["INFO first", "DEBUG second", "WARNING third"]
    logger.error("fourth")
    assert stream.getvalue().splitlines()[-1] == "ERROR fourth"
    handler.close()


def test_flush_and_close_write_everything_queued() -> None:
    stream = Stream()
    logger, handler = _logger(stream)
    logger.info("one")
    logger.info("two")
    handler.flush()
    assert stream.getvalue() == "INFO one\nINFO two\n"
    logger.info("three")
    handler.close()
    assert stream.getvalue().endswith("INFO three\n")


def test_lines_from_many_threads_stay_whole() -> None:
    stream = Stream()
    logger, handler = _logger(stream)

    def chatter(name: str) -> None:
        for n in range(200):
            logger.info("%s-%d", name, n) if n % 7 else logger.warning("%s-%d", name, n)

    threads = [threading.Thread(target=chatter, args=(f"t{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    handler.flush()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 800
    for i in range(4):  # each thread's lines in the order it logged them
        mine = [line.split()[1] for line in lines if line.split()[1].startswith(f"t{i}-")]
        assert mine == [f"t{i}-{n}" for n in range(200)]
    handler.close()
