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
