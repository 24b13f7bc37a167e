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
from typing import Any

import orjson

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
        return orjson.loads(body)


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
        return orjson.loads(body)

    def close(self) -> None:
        try:
            self.writer.close()
        except (RuntimeError, OSError):
            pass
