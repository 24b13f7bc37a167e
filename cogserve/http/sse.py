"""Server-sent event streams of a prediction (`Accept: text/event-stream`).

Each stream is a small bounded queue fed by the prediction's `EventHistory` and one
writer loop that drains it. The history pushes without ever awaiting, so a slow
client can neither slow the model nor the other clients: its queue grows until the
byte budget (COGSERVE_SSE_CLIENT_BUFFER, default 4 MiB) is exceeded, then its backlog
is dropped and it gets the reference's `lagged` error event and is closed. The writer
sends everything queued since its last wake-up as one chunk, which keeps a fast token
stream to a write per loop iteration instead of a write per token.

Once the prediction is over, a client gets END_GRACE seconds to take what is still
queued; for one that reads nothing that long the stream task ends and the response
is abandoned (uvicorn then closes the transport), so a stuck peer holds no task or
queue. ASGI gives no way to abort the socket itself.

Disconnects: the server stops writing at once. A stream that created its prediction
with `POST` cancels it, as the reference (and a sync POST) does; a `PUT` stream does
not, since the client can reconnect with the same PUT and get the replay.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from cogserve.http.asgi import Receive, Scope, Send
from cogserve.http.disconnect import abandon
from cogserve.process.envvars import env_int
from cogserve.runtime.events import RuntimeEvent, SSEChange
from cogserve.runtime.history import EventHistory, frame, history_of
from cogserve.runtime.prediction import Prediction
from cogserve.runtime.service import Service

HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),  # proxies such as nginx must not hold events back
]
TRUNCATED = "SSE stream replay truncated; events were dropped"
LAGGED = "SSE stream lagged; events were dropped"
FRAME_COST = 64  # bookkeeping per queued frame, counted against the byte budget
REPLAY_BATCH = 256 * 1024
DEFAULT_CLIENT_BUFFER = 4 * 1024 * 1024
END_GRACE = 30.0

log = logging.getLogger("cogserve")

Handler = Callable[[Scope, Receive, Send, Prediction, bool], Awaitable[None]]


class ClientQueue:
    """One client's pending frames; `push` is called by the history, never blocks."""

    __slots__ = ("frames", "size", "limit", "waiter", "ended", "lagged", "skipped", "gone",
                 "on_end")

    def __init__(self, limit: int) -> None:
        self.frames: list[bytes] = []
        self.size = 0
        self.limit = limit
        self.waiter: asyncio.Future[None] | None = None
        self.ended = False  # the `completed` event is queued, or the client was cut off
        self.lagged = False
        self.skipped = 0
        self.gone = False  # the client disconnected
        self.on_end: Callable[[], None] | None = None

    def push(self, data: bytes, last: bool) -> None:
        if self.ended:
            self.skipped += self.lagged
            return
        self.frames.append(data)
        self.size += len(data) + FRAME_COST
        if last:
            self.ended = True
        elif self.size > self.limit:
            self.skipped += len(self.frames)
            self.frames = []
            self.size = 0
            self.ended = self.lagged = True
        if self.ended and self.on_end is not None:
            self.on_end()
        self.wake()

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def take(self) -> bytes:
        frames = self.frames
        self.frames = []
        self.size = 0
        return frames[0] if len(frames) == 1 else b"".join(frames)


def client_buffer() -> int:
    return env_int("COGSERVE_SSE_CLIENT_BUFFER", DEFAULT_CLIENT_BUFFER, minimum=1) or 1


def handler(service: Service) -> Handler:
    """The `CogRoutes.sse_handler` hook, bound to the service (to cancel on disconnect)."""
    limit = client_buffer()

    async def stream(scope: Scope, receive: Receive, send: Send, prediction: Prediction,
                     created: bool) -> None:
        history = history_of(prediction)
        if history is None:  # not created as streaming: live events only
            history = EventHistory(0)
            prediction.subscribe(history)
        queue = ClientQueue(limit)
        replay, skipped = history.attach(queue, created)
        if history.finished:  # nothing live will follow the replay
            queue.ended = True
        await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
        if skipped:
            await _end(send, frame(b"error", {"error": TRUNCATED, "skipped": skipped}))
            return
        loop = asyncio.get_running_loop()
        service.events.emit(RuntimeEvent.SSE_CLIENT, change=SSEChange.CONNECTED)
        watcher = asyncio.ensure_future(_watch(receive, queue))
        writer = asyncio.ensure_future(_write(send, queue, replay))
        timers: list[asyncio.TimerHandle] = []
        grace: list[bool] = []  # holds True once END_GRACE has passed after the end

        def grace_over() -> None:
            grace.append(True)
            writer.cancel()

        queue.on_end = lambda: timers.append(loop.call_later(END_GRACE, grace_over))
        if queue.ended:
            queue.on_end()
        owned = created and scope["method"] == "POST"  # its client leaving cancels it
        try:
            completed = await writer
        except asyncio.CancelledError:
            if not grace:  # the handler itself is cancelled: the server gave up on it
                if owned:  # (Ray Serve's direct ingress does so when the client leaves)
                    abandon(service, prediction)
                raise
            log.warning("SSE client of prediction %s read nothing for %gs after the stream "
                        "ended; dropping the connection", prediction.id, END_GRACE)
            return  # the response stays incomplete, so the connection is closed
        finally:
            if queue.lagged:
                service.events.emit(RuntimeEvent.SSE_CLIENT, change=SSEChange.LAGGED)
            service.events.emit(RuntimeEvent.SSE_CLIENT, change=SSEChange.DISCONNECTED)
            history.detach(queue)
            watcher.cancel()
            writer.cancel()
            for timer in timers:
                timer.cancel()
        if not completed and owned:
            abandon(service, prediction)

    return stream


async def replay_finished(send: Send, frames: bytes, skipped: int) -> None:
    """A `PUT` stream for a prediction that finished already: its kept events, then end."""
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    if skipped:
        await _end(send, frame(b"error", {"error": TRUNCATED, "skipped": skipped}))
    else:
        await _end(send, frames)


async def _write(send: Send, queue: ClientQueue, replay: list[bytes]) -> bool:
    """Send the replay, then live frames until the end; False if the client went away."""
    batch: list[bytes] = []
    size = 0
    for data in replay:
        batch.append(data)
        size += len(data)
        if size >= REPLAY_BATCH:
            await _chunk(send, b"".join(batch))
            batch, size = [], 0
            if queue.gone:
                return False
    if batch:
        await _chunk(send, b"".join(batch))
    loop = asyncio.get_running_loop()
    while not queue.gone:
        if queue.frames:
            await _chunk(send, queue.take())
            continue
        if queue.ended:
            last = b""
            if queue.lagged:
                last = frame(b"error", {"error": LAGGED, "skipped": queue.skipped})
            await _end(send, last)
            return True
        queue.waiter = loop.create_future()
        await queue.waiter
        queue.waiter = None
    return False


async def _chunk(send: Send, body: bytes) -> None:
    await send({"type": "http.response.body", "body": body, "more_body": True})


async def _end(send: Send, body: bytes) -> None:
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _watch(receive: Receive, queue: ClientQueue) -> None:
    """Wake the writer when the client disconnects, so it stops at once."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            queue.gone = True
            queue.wake()
            return
