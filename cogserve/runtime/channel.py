"""The parent's end of a worker channel, as an asyncio protocol.

Frames are decoded and handed to `handle` straight from data_received: no reader
task, no readexactly() futures, so a worker message costs no task switch. (Kept out
of `cogserve.wire.ipc`, which the worker imports, so a sync worker never loads asyncio.)
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

from cogserve.wire.ipc import FrameSplitter, encode
from cogserve.wire.protocol import Message


class AsyncChannel(asyncio.Protocol):
    """One socket to the worker: frames in through `handle`, `send` frames out."""

    def __init__(self, handle: Callable[[Message], None]) -> None:
        self._frames = FrameSplitter(handle)
        self.transport: asyncio.Transport | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    @classmethod
    async def open(cls, sock: socket.socket,
                   handle: Callable[[Message], None]) -> AsyncChannel:
        loop = asyncio.get_running_loop()
        _, channel = await loop.create_unix_connection(lambda: cls(handle), sock=sock)
        return channel

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._frames.feed(data)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def send(self, message: Message) -> None:
        """Write one frame; on a closed channel (the worker has ended) it is dropped.

        The worker's exit is handled once it is noticed (`WorkerProcess` waits for the
        process), and fails whatever was in flight on it, this frame's prediction
        included. uvloop raises RuntimeError for a write to a closed transport where
        asyncio's own loop drops it; the server would answer that request 500.
        """
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(encode(message))

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
