"""One HTTP/1.1 request and its response, as the ASGI app sees them (`receive`, `send`),
under cogserve's own connection (`http.connection`).

What the app sends becomes bytes on the transport here: the status line, the server's
default headers (Date, made by uvicorn once a second), the app's headers checked once
per distinct line, and the body, plain or chunked. The head of a response whose body
has a known length is held back and written with the first bytes of that body: one
write() and one wake-up of the client for every JSON answer sent whole. `Cycle.respond`
takes such an answer in one call (`http.responses.send_json`), without the two ASGI
messages and their coroutines; `Cycle.status` is what the request observer logs, and
`Cycle.on_disconnect` tells a waiting prediction at once that its client has gone.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

log = logging.getLogger("uvicorn.error")  # where uvicorn's own protocols say the same

JOIN_LIMIT = 256 * 1024  # bytes of body copied to send the head with it in one write
HIGH_WATER = 64 * 1024  # bytes of request body buffered before reading pauses

_BAD_NAME = re.compile(rb'[\x00-\x20\x7f()<>@,;:\[\]={}\\"/?]')  # not an RFC 9110 token
_BAD_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")  # control characters but tab
_SHAPING = (b"content-length", b"transfer-encoding", b"connection")
_STATUS_LINES = {int(s): b"HTTP/1.1 %d %s\r\n" % (s, s.phrase.encode()) for s in HTTPStatus}
# response header lines checked once (name and value as the app gave them -> the line
# written, name lowercased): Content-Type and the like recur on every answer; a header
# that shapes the response (a length, chunking, Connection) is read each time
_checked_lines: dict[tuple[bytes, bytes], bytes] = {}
_CHECKED_LINES = 1024  # distinct lines kept, at most
_checked_defaults: tuple[list[tuple[bytes, bytes]] | None, bytes | None] = (None, None)


def status_line(status: int) -> bytes:
    line = _STATUS_LINES.get(status)
    return line if line is not None else b"HTTP/1.1 %d \r\n" % status


def _check(name: bytes, value: bytes) -> None:
    if _BAD_NAME.search(name):
        raise RuntimeError("Invalid HTTP header name.")
    if _BAD_VALUE.search(value):
        raise RuntimeError("Invalid HTTP header value.")


def _default_head(headers: list[tuple[bytes, bytes]]) -> bytes | None:
    """The server's default headers as head bytes, checked and joined once per list
    (uvicorn makes a new one once per second); None when one of them shapes the
    response (a length, chunking, `Connection`), which the cycle then reads with the
    app's."""
    global _checked_defaults
    if _checked_defaults[0] is headers:
        return _checked_defaults[1]
    parts: list[bytes] = []
    joined: bytes | None = None
    for name, value in headers:
        _check(name, value)
        if name.lower() in _SHAPING:
            break
        parts.extend((name.lower(), b": ", value, b"\r\n"))
    else:
        joined = b"".join(parts)
    _checked_defaults = (headers, joined)
    return joined


class Signal:
    """asyncio.Event's part that the cycle uses (set, wait), without its lock mixin: one
    per request, set by the parser callbacks, awaited by `receive`."""

    __slots__ = ("is_set", "_waiter")

    def __init__(self) -> None:
        self.is_set = False
        self._waiter: asyncio.Future[None] | None = None

    def set(self) -> None:
        if not self.is_set:
            self.is_set = True
            waiter = self._waiter
            if waiter is not None:
                self._waiter = None
                if not waiter.done():
                    waiter.set_result(None)

    async def wait(self) -> None:
        if self.is_set:
            return
        waiter = self._waiter
        if waiter is None or waiter.done():
            waiter = self._waiter = asyncio.get_running_loop().create_future()
        await waiter


class FlowControl:
    """Back-pressure both ways on one connection: reading paused while a request body
    waits unread, writing waited for while the transport's buffer is full."""

    __slots__ = ("transport", "read_paused", "write_paused", "_writable")

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.read_paused = False
        self.write_paused = False
        self._writable = asyncio.Event()
        self._writable.set()

    async def drain(self) -> None:
        await self._writable.wait()

    def pause_reading(self) -> None:
        if not self.read_paused:
            self.read_paused = True
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self.read_paused:
            self.read_paused = False
            self.transport.resume_reading()

    # the transport calls these two in turn, and the connection resumes once more when
    # it is lost: each is idempotent as it stands, so neither asks first
    def pause_writing(self) -> None:
        self.write_paused = True
        self._writable.clear()

    def resume_writing(self) -> None:
        self.write_paused = False
        self._writable.set()


def _nothing() -> None:
    pass


class Cycle:
    """One request and its response. Only a head announcing a body is held (a
    `Content-Length` above zero, not a `HEAD` request, not chunked): the app sends that
    body next. Anything else (a chunked stream's head, a bodiless answer) is written at
    once; a large body is not copied to join it (two writes); a held head is written
    before the connection is closed under it (the app failed after starting its
    response)."""

    __slots__ = ("scope", "transport", "flow", "default_headers", "message_event",
                 "on_response", "disconnected", "keep_alive", "waiting_for_100_continue",
                 "body", "body_size", "more_body", "response_started", "response_complete",
                 "chunked_encoding", "expected_content_length", "_held", "status",
                 "on_disconnect")

    def __init__(self, scope: Any, transport: asyncio.Transport, flow: FlowControl,
                 default_headers: list[tuple[bytes, bytes]], expect_100_continue: bool,
                 keep_alive: bool, on_response: Callable[[], None]) -> None:
        self.scope = scope
        self.transport = transport
        self.flow = flow
        self.default_headers = default_headers
        self.message_event = Signal()
        self.on_response = on_response  # the connection's: the next request may start
        self.disconnected = False
        self.keep_alive = keep_alive
        self.waiting_for_100_continue = expect_100_continue
        # the body's pieces as the parser gave them, joined when the app receives them:
        # one copy of every byte of a large body or, for a piece received alone, none
        self.body: list[bytes] = []
        self.body_size = 0
        self.more_body = True
        self.response_started = False
        self.response_complete = False
        self.chunked_encoding: bool | None = None
        self.expected_content_length = 0
        self._held: bytes | None = None
        # the status of the last `http.response.start` the app sent (499 before one: the
        # request observer's reading of a client that left first), whether or not it was
        # written: what the observer would see wrapping `send`, without the wrapper
        self.status = 499
        # called once the client has gone (the connection lost before the response was
        # complete): `http.disconnect.wait_or_disconnect` sets it while a prediction runs
        self.on_disconnect: Callable[[], None] | None = None

    def body_received(self, body: bytes) -> None:
        """A piece of the request body from the parser (a bytes object of its own)."""
        self.body.append(body)
        self.body_size += len(body)
        if self.body_size > HIGH_WATER:
            self.flow.pause_reading()
        self.message_event.set()

    def lost(self) -> None:
        """The connection was lost (or closed under this request)."""
        if not self.response_complete:
            self.disconnected = True
        self.message_event.set()
        if self.disconnected and self.on_disconnect is not None:
            self.on_disconnect()

    async def run_asgi(self, app: Any) -> None:
        try:
            result = await app(self.scope, self.receive, self.send)
        except BaseException as exc:
            log.error("Exception in ASGI application\n", exc_info=exc)
            if not self.response_started:
                await self.send_500_response()
            else:
                self._close()
        else:
            if result is not None:
                log.error("ASGI callable should return None, but returned '%s'.", result)
                self._close()
            elif not self.response_started and not self.disconnected:
                log.error("ASGI callable returned without starting response.")
                await self.send_500_response()
            elif not self.response_complete and not self.disconnected:
                log.error("ASGI callable returned without completing response.")
                self._close()
        finally:
            self.on_response = _nothing

    def _close(self) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self.transport.write(held)
        self.transport.close()

    async def send_500_response(self) -> None:
        await self.send({"type": "http.response.start", "status": 500, "headers": [
            (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"21"),
            (b"connection", b"close")]})
        await self.send({"type": "http.response.body", "body": b"Internal Server Error",
                         "more_body": False})

    async def send(self, message: Any) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self.status = message["status"]
        if self.flow.write_paused and not self.disconnected:
            await self.flow.drain()
        if self.disconnected:
            return
        if not self.response_started:
            if kind != "http.response.start":
                raise RuntimeError(f"Expected ASGI message 'http.response.start', but got "
                                   f"'{kind}'.")
            self._start(message["status"], message.get("headers", ()))
        elif not self.response_complete:
            if kind != "http.response.body":
                raise RuntimeError(f"Expected ASGI message 'http.response.body', but got "
                                   f"'{kind}'.")
            self._body(message.get("body", b""), message.get("more_body", False))
        else:
            raise RuntimeError(f"Unexpected ASGI message '{kind}' sent, after response "
                               "already completed.")

    def respond(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> bool:
        """A whole response at once: what `send` does with its start and then its one
        body message, without the two messages and coroutines. False, having done
        nothing, when `send` is needed: a response already started, or writing paused
        (`send` waits for the drain)."""
        if self.response_started or (self.flow.write_paused and not self.disconnected):
            return False
        self.status = status
        if not self.disconnected:
            self._start(status, headers)
            self._body(body, False)
        return True

    def _start(self, status: int, headers: Any) -> None:
        self.response_started = True
        self.waiting_for_100_continue = False
        defaults = self.default_headers
        default_head = _default_head(defaults)
        if default_head is None:
            content = [status_line(status)]
            headers = defaults + list(headers)
        else:
            content = [status_line(status), default_head]
        has_connection_close = False
        for name, value in headers:
            line = _checked_lines.get((name, value))
            if line is not None:  # written before, checked then
                content.append(line)
                continue
            if name == b"content-length" and value.isdigit():  # a name and value to trust
                if self.chunked_encoding is None:
                    self.expected_content_length = int(value)
                    self.chunked_encoding = False
                content.extend((name, b": ", value, b"\r\n"))
                continue
            _check(name, value)
            lowered = name.lower()
            if lowered == b"content-length" and self.chunked_encoding is None:
                self.expected_content_length = int(value.decode())
                self.chunked_encoding = False
            elif lowered == b"transfer-encoding" and value.lower() == b"chunked":
                self.expected_content_length = 0
                self.chunked_encoding = True
            elif lowered == b"connection":
                if b"close" in [token.lower().strip() for token in value.split(b",")]:
                    self.keep_alive = False
                    has_connection_close = True
            elif lowered not in _SHAPING and len(_checked_lines) < _CHECKED_LINES:
                _checked_lines[(name, value)] = lowered + b": " + value + b"\r\n"
            content.extend((lowered, b": ", value, b"\r\n"))
        if not self.keep_alive and not has_connection_close:
            content.append(b"connection: close\r\n")
        head_only = self.scope["method"] == "HEAD"
        if self.chunked_encoding is None and not head_only and status not in (204, 304):
            self.chunked_encoding = True  # neither a length nor chunked given
            content.append(b"transfer-encoding: chunked\r\n")
        content.append(b"\r\n")
        head = b"".join(content)
        if self.chunked_encoding is False and self.expected_content_length > 0 \
                and not head_only:
            self._held = head  # written with the body, next
        else:
            self.transport.write(head)

    def _body(self, body: bytes, more_body: bool) -> None:
        if self.scope["method"] == "HEAD":
            self.expected_content_length = 0
        elif self.chunked_encoding:
            content = [b"%x\r\n" % len(body), body, b"\r\n"] if body else []
            if not more_body:
                content.append(b"0\r\n\r\n")
            self.transport.write(b"".join(content))
        else:
            num_bytes = len(body)
            if num_bytes > self.expected_content_length:
                raise RuntimeError("Response content longer than Content-Length")
            self.expected_content_length -= num_bytes
            held = self._held
            if held is None:
                self.transport.write(body)
            else:
                self._held = None
                if num_bytes <= JOIN_LIMIT:
                    self.transport.write(held + body)
                else:
                    self.transport.write(held)
                    self.transport.write(body)
        if not more_body:
            if self.expected_content_length != 0:
                raise RuntimeError("Response content shorter than Content-Length")
            self.response_complete = True
            self.message_event.set()
            if not self.keep_alive:
                self.transport.close()
            self.on_response()

    async def receive(self) -> Any:
        if self.waiting_for_100_continue and not self.transport.is_closing():
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.waiting_for_100_continue = False
        if not self.disconnected and not self.response_complete:
            flow = self.flow
            if flow.read_paused:
                flow.resume_reading()
            event = self.message_event
            if not event.is_set:
                await event.wait()
            event.is_set = False
        if self.disconnected or self.response_complete:
            return {"type": "http.disconnect"}
        pieces = self.body
        body = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        self.body = []
        self.body_size = 0
        return {"type": "http.request", "body": body, "more_body": self.more_body}
