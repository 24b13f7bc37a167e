"""The parent<->worker message channel: length-prefixed JSON frames over socketpairs.

The worker's fd 1 and 2 are pipes for user output; these sockets are separate file
descriptors that user code never writes to, so a print (from Python, C or a child
process) cannot corrupt a frame. The control channel carries lifecycle messages (and
cancels, which must not queue behind a prediction's output); the data channel carries
predictions and their events, each message tagged with its prediction's id.

What travels in the frames (every message kind, its fields, the file and tensor
markers) is defined in `cogserve.wire.protocol`; this module only moves bytes.
"""

from __future__ import annotations

import select
import socket
import struct
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import orjson

from cogserve.wire import jsoncodec
from cogserve.wire.protocol import Message

if TYPE_CHECKING:
    import asyncio  # a sync worker never imports asyncio (20 ms of its start)

_HEADER = struct.Struct("!I")
_CHUNK = 65536  # bytes asked of one recv() on a blocking channel


def encode(message: Message) -> bytes:
    body = orjson.dumps(message, option=orjson.OPT_SERIALIZE_NUMPY)
    return _HEADER.pack(len(body)) + body


class SyncChannel:
    """The worker's blocking end of a socket; writes may come from any thread."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._lock = threading.Lock()
        self._buf = bytearray()  # received bytes past the last frame returned
        self._readable = select.poll()  # what recv() waits on: see _read
        self._readable.register(sock.fileno(), select.POLLIN)

    def send(self, message: Message) -> None:
        data = encode(message)
        with self._lock:
            self.sock.sendall(data)

    def send_many(self, messages: list[Message]) -> None:
        """Several frames in one write (a batch's terminal frames)."""
        data = b"".join([encode(message) for message in messages])
        with self._lock:
            self.sock.sendall(data)

    def recv(self) -> Message | None:
        """The next frame's message, or None once the other end has closed.

        One recv() system call per frame when a frame comes whole and alone, the usual
        case (a prediction), decoded from that chunk as it is. This replaced a buffered
        file's two reads (header, body) whose io layers cost ~1.7 us per frame against
        ~0.5 us; what comes past a frame waits in `_buf` for the next call.
        """
        buf = self._buf
        if not buf:
            chunk = self._read(_CHUNK)
            total = len(chunk)
            if total >= 4 and _HEADER.unpack_from(chunk)[0] == total - 4:
                whole: Message = jsoncodec.loads(chunk[4:])
                return whole
            if not chunk:
                return None
            buf += chunk
        while True:
            if len(buf) >= 4:
                end = 4 + _HEADER.unpack_from(buf)[0]
                if len(buf) >= end:
                    message: Message = jsoncodec.loads(buf[4:end])
                    del buf[:end]
                    return message
                if end - len(buf) > _CHUNK:
                    return self._recv_large(end)
            chunk = self._read(_CHUNK)
            if not chunk:
                return None
            buf += chunk

    def _recv_large(self, end: int) -> Message | None:
        """The rest of a frame of `end` bytes (a batch's inputs: MBs) read into its place,
        and its JSON decoded where it lies: gathered chunk by chunk, each byte was copied
        twice more (into the buffer, then out as the frame's slice)."""
        buf = self._buf
        frame = bytearray(end)
        have = len(buf)
        frame[:have] = buf
        buf.clear()
        with memoryview(frame) as view:
            while have < end:
                self._readable.poll()  # see _read
                got = self.sock.recv_into(view[have:])
                if not got:
                    return None
                have += got
            message: Message = jsoncodec.loads(view[4:])
        return message

    def _read(self, size: int) -> bytes:
        """Up to `size` bytes, once there are some (or the other end closed).

        The wait is a poll() for POLLIN, not a blocking recv(): the socket is also the one
        we write to, and each time the parent reads one of our frames the kernel wakes
        every waiter on the socket to say there is room to write. A thread blocked in
        recv() wakes for that too, finds nothing and sleeps again: a second pair of
        context switches per prediction (1.88 voluntary switches per no-op prediction
        measured, 1 needed). A poll() for POLLIN only is not woken by it.
        """
        self._readable.poll()
        return self.sock.recv(size)

    def watch(self, loop: asyncio.AbstractEventLoop, handle: Callable[[Message], None],
              on_closed: Callable[[], None]) -> None:
        """Deliver incoming frames to `handle` on `loop`, without a reader thread.

        An async worker used a thread that blocked in recv() and handed each message to
        the loop; waking it costs a GIL hand-off, which can wait out the 5 ms switch
        interval while the loop runs predictions. The socket stays blocking (other
        threads write to it with sendall), so reads here use MSG_DONTWAIT.
        """
        frames = FrameSplitter(handle)
        sock = self.sock
        fd = sock.fileno()

        def readable() -> None:
            try:
                chunk = sock.recv(1 << 20, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                chunk = b""
            if not chunk:
                loop.remove_reader(fd)
                on_closed()
                return
            frames.feed(chunk)

        loop.add_reader(fd, readable)


_SMALL_FRAME = 64 * 1024  # a chunk this small that is one whole frame is sliced, not viewed


class FrameSplitter:
    """Cuts a byte stream into frames and hands each decoded message on, in order.

    The most common chunk, one small whole frame (a prediction's result), is sliced and
    decoded; other chunks holding whole frames with nothing buffered are parsed in place
    through a memoryview; only a partial frame is copied into the buffer.
    """

    __slots__ = ("_buf", "_handle")

    def __init__(self, handle: Callable[[Message], None]) -> None:
        self._buf = bytearray()
        self._handle = handle

    def feed(self, chunk: bytes) -> None:
        buf = self._buf
        total = len(chunk)
        if not buf and 4 <= total <= _SMALL_FRAME and \
                _HEADER.unpack_from(chunk)[0] == total - 4:  # one small frame, whole
            self._handle(jsoncodec.loads(chunk[4:]))
            return
        if buf:
            buf.extend(chunk)
            data: bytes | bytearray = buf
        else:
            data = chunk
        view = memoryview(data)
        size_of = _HEADER.unpack_from
        pos, total = 0, len(data)
        try:
            while total - pos >= 4:
                end = pos + 4 + size_of(data, pos)[0]
                if end > total:
                    break
                self._handle(jsoncodec.loads(view[pos + 4:end]))
                pos = end
        finally:
            view.release()
            if data is buf:
                del buf[:pos]
            elif pos < total:
                buf.extend(chunk[pos:])
