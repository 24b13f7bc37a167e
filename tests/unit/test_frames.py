"""The frame splitter: a byte stream cut anywhere gives the same messages, in order."""

from __future__ import annotations

from cogserve import ipc, protocol
from cogserve.protocol import Mode

MESSAGES = [protocol.log("p1", "stdout", "x" * 300), protocol.cancel("p1"),
            protocol.predict("p2", {"text": "é" * 50}, Mode.PREDICT), protocol.ready()]
STREAM = b"".join(ipc.encode(m) for m in MESSAGES)


def split(chunks: list[bytes]) -> list[protocol.Message]:
    got: list[protocol.Message] = []
    splitter = ipc.FrameSplitter(got.append)
    for chunk in chunks:
        splitter.feed(chunk)
    return got


def test_whole_frames_in_one_chunk() -> None:
    assert split([STREAM]) == MESSAGES


def test_every_cut_point_gives_the_same_messages() -> None:
    for cut in range(1, len(STREAM)):
        assert split([STREAM[:cut], STREAM[cut:]]) == MESSAGES, cut


def test_byte_by_byte() -> None:
    assert split([STREAM[i:i + 1] for i in range(len(STREAM))]) == MESSAGES


def test_a_partial_frame_waits_for_the_rest() -> None:
    first = ipc.encode(protocol.ready())
    got: list[protocol.Message] = []
    splitter = ipc.FrameSplitter(got.append)
    splitter.feed(first[:3])
    splitter.feed(first[3:-1])
    assert got == []
    splitter.feed(first[-1:])
    assert got == [protocol.ready()]
