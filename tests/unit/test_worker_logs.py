"""The worker's line buffer: whole lines as written, and no piece bigger than PIECE
however the model writes (no newline at all, or one huge line)."""

from __future__ import annotations

from cogserve.worker.logs import PIECE, LineBuffer


def _pieces(*writes: str) -> list[str]:
    sent: list[str] = []
    buffer = LineBuffer("stdout", lambda _, data: sent.append(data))
    for text in writes:
        buffer.write(text)
    buffer.flush()
    return sent


def test_lines_are_sent_whole_as_they_end() -> None:
    assert _pieces("a", "b\nc", "\n", "d") == ["ab\n", "c\n", "d"]


def test_text_without_newlines_is_sent_in_pieces() -> None:
    sent = _pieces(*["x" * 1000] * 300)  # 300,000 characters, no newline
    assert "".join(sent) == "x" * 300_000
    assert max(map(len, sent)) <= PIECE and len(sent) == 5  # 65 + 65 + 65 + 65 + 40 writes


def test_one_huge_line_is_sent_in_pieces() -> None:
    sent = _pieces("y" * (3 * PIECE + 5) + "\n")
    assert "".join(sent) == "y" * (3 * PIECE + 5) + "\n"
    assert max(map(len, sent)) <= PIECE


def test_settle_may_be_called_from_two_threads_at_once() -> None:
    """A sync @batch worker ends a prediction cancelled before its batch ran on its
    read-ahead thread while the main thread ends others (bench scenario 12b found
    `RuntimeError: concurrent poll() invocation`, which ended the worker)."""
    import os
    import threading

    from cogserve.worker.logs import LogRouter, LogTarget, _Drain

    router = LogRouter(LogTarget(lambda source, data: None))
    read_end, write_end = os.pipe()
    try:
        router.add_drain(_Drain(read_end))
        errors: list[BaseException] = []

        def hammer() -> None:
            try:
                for _ in range(20_000):
                    router.settle(timeout=0)
            except BaseException as exc:  # noqa: BLE001 - the test reports it
                errors.append(exc)

        threads = [threading.Thread(target=hammer) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
    finally:
        os.close(read_end)
        os.close(write_end)
