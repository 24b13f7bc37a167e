"""The parent<->worker message channel: length-prefixed JSON frames over socketpairs.

The worker's fd 1 and 2 are pipes for user output; these sockets are separate file
descriptors that user code never writes to, so a print (from Python, C or a child
process) cannot corrupt a frame. One control channel carries lifecycle messages and
one channel per slot carries that slot's prediction, so a chatty prediction never
delays another slot's messages.

Messages are dicts with a "t" (type) key:
  control, parent -> worker: cancel{id}, healthcheck{id}, shutdown
  control, worker -> parent: schema{...}, log{source,data}, ready, setup_failed{error},
                             fatal{reason}, healthcheck_result{id,status,error}
  slot, parent -> worker:    predict{id,input|input_file,output_dir}
  slot, worker -> parent:    log{source,data}, output{output}, metric{name,value,mode},
                             done{output,predict_time,metrics}, failed{error}, cancelled
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

import orjson

from cogserve import jsoncodec

_HEADER = struct.Struct("!I")
MAX_FRAME = 1 << 31


def encode(message: dict[str, Any]) -> bytes:
    body = orjson.dumps(message, option=orjson.OPT_SERIALIZE_NUMPY)
    return _HEADER.pack(len(body)) + body


class SyncChannel:
    """The worker's blocking end of a socket; writes may come from any thread."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._lock = threading.Lock()
        self._rfile = sock.makefile("rb", buffering=65536)

    def send(self, message: dict[str, Any]) -> None:
        data = encode(message)
        with self._lock:
            self.sock.sendall(data)

    def recv(self) -> dict[str, Any] | None:
        header = self._rfile.read(4)
        if len(header) < 4:
            return None
        (size,) = _HEADER.unpack(header)
        body = self._rfile.read(size)
        if len(body) < size:
            return None
        return jsoncodec.loads(body)


    def watch(self, loop: asyncio.AbstractEventLoop, handle: Callable[[dict[str, Any]], None],
              on_closed: Callable[[], None]) -> None:
        """Deliver incoming frames to `handle` on `loop`, without a reader thread.

        An async worker used a thread that blocked in recv() and handed each message to
        the loop; waking it costs a GIL hand-off, which can wait out the 5 ms switch
        interval while the loop runs predictions. The socket stays blocking (other
        threads write to it with sendall), so reads here use MSG_DONTWAIT.
        """
        buf = bytearray()
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
            buf.extend(chunk)
            while len(buf) >= 4:
                (size,) = _HEADER.unpack_from(buf)
                end = 4 + size
                if len(buf) < end:
                    break
                message = jsoncodec.loads(buf[4:end])
                del buf[:end]
                handle(message)

        loop.add_reader(fd, readable)


class AsyncChannel:
    """An asyncio end of a socket (the parent's, and an async worker's)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, sock: socket.socket) -> AsyncChannel:
        reader, writer = await asyncio.open_unix_connection(sock=sock, limit=1 << 20)
        return cls(reader, writer)

    def send(self, message: dict[str, Any]) -> None:
        self.writer.write(encode(message))

    async def recv(self) -> dict[str, Any] | None:
        try:
            header = await self.reader.readexactly(4)
            (size,) = _HEADER.unpack(header)
            body = await self.reader.readexactly(size)
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        return jsoncodec.loads(body)

    def close(self) -> None:
        try:
            self.writer.close()
        except (RuntimeError, OSError):
            pass
