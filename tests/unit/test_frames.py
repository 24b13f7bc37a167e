"""The frame splitter: a byte stream cut anywhere gives the same messages, in order."""

from __future__ import annotations

from cogserve.wire import ipc, protocol
from cogserve.wire.protocol import Mode

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


# ---------------------------------------------------------------- the worker's SyncChannel


def _received(chunks: list[bytes]) -> list[protocol.Message | None]:
    """What SyncChannel.recv returns for a stream written in these pieces, then closed."""
    import socket
    import threading

    ours, theirs = socket.socketpair()

    def write() -> None:
        for chunk in chunks:
            theirs.sendall(chunk)
        theirs.close()

    writer = threading.Thread(target=write)
    writer.start()
    channel = ipc.SyncChannel(ours)
    got: list[protocol.Message | None] = []
    while True:
        message = channel.recv()
        got.append(message)
        if message is None:
            break
    writer.join()
    ours.close()
    return got


def test_sync_channel_frames_whole_together_and_cut() -> None:
    assert _received([STREAM]) == [*MESSAGES, None]
    for cut in (1, 3, 4, 5, len(STREAM) // 2, len(STREAM) - 1):
        assert _received([STREAM[:cut], STREAM[cut:]]) == [*MESSAGES, None], cut
    assert _received([bytes([b]) for b in STREAM]) == [*MESSAGES, None]


def test_sync_channel_large_frame_and_a_closed_half_frame() -> None:
    big = protocol.log("p1", "stdout", "y" * 300_000)
    frame = ipc.encode(big)
    assert _received([frame, ipc.encode(protocol.ready())]) == [big, protocol.ready(), None]
    assert _received([frame[:-1]]) == [None]  # closed mid-frame: no message


def test_sync_channel_large_frame_in_pieces_with_frames_around_it() -> None:
    """A frame larger than one read (a batch's inputs) is read into its place; the frames
    before and after it, cut anywhere, come whole and in order."""
    big = protocol.log("p1", "stdout", "z" * 2_000_000)
    stream = ipc.encode(protocol.ready()) + ipc.encode(big) + ipc.encode(protocol.ready())
    for cut in (2, 9, 70_000, 1_000_000, len(stream) - 3):
        pieces = [stream[:cut], stream[cut:cut + 100_001], stream[cut + 100_001:]]
        assert _received(pieces) == [protocol.ready(), big, protocol.ready(), None], cut
