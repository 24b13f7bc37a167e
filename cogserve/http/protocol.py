"""uvicorn's httptools protocol with the limits a server on an open port needs.

httptools (llhttp) accepts a request head of any size and any number of headers, and
uvicorn closes an idle connection only after a response: a 1 MiB header, 100,000
headers, or a client that opens connections and trickles a byte now and then
(slowloris) were all held for ever. This subclass adds, per connection:

- a request head over `max_head_bytes` (request line + headers) or with more than
  `max_headers` headers gets 431 and the connection is closed, as the reference does;
- a request head that has not arrived in full `head_timeout` seconds after the
  connection opened (or after the previous response) closes the connection;
- a request body that stops arriving for `body_timeout` seconds (a lying
  Content-Length) closes the connection; the handler sees a disconnect.

Everything is counted in callbacks uvicorn already runs, and one timer per connection
is re-armed only when it fires (a phase that needs no watch just marks it idle), so a
normal request pays a few integer additions and no timer of its own.

It also writes a response's head and its body in one write() (`_HeadHolder`): uvicorn
writes the status line and headers as soon as the app starts its response and the body
when it sends it, two system calls (and two wake-ups of the client) for every JSON answer
sent whole.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from cogserve.envvars import env_float, env_int


@dataclass(frozen=True)
class ConnectionLimits:
    max_head_bytes: int = 64 * 1024
    max_headers: int = 100
    head_timeout: float = 30.0
    body_timeout: float = 30.0

    @classmethod
    def from_env(cls) -> ConnectionLimits:
        default = cls()
        return cls(
            max_head_bytes=env_int("COGSERVE_MAX_HEADER_BYTES", default.max_head_bytes)
            or default.max_head_bytes,
            max_headers=env_int("COGSERVE_MAX_HEADERS", default.max_headers)
            or default.max_headers,
            head_timeout=env_float("COGSERVE_HEADER_TIMEOUT", default.head_timeout)
            or default.head_timeout,
            body_timeout=env_float("COGSERVE_BODY_TIMEOUT", default.body_timeout)
            or default.body_timeout,
        )


JOIN_LIMIT = 256 * 1024  # bytes of body copied to send the head with it in one write


class _HeadTooLarge(Exception):
    """Raised inside a parser callback to stop parsing a head over the limits."""


def protocol_class(limits: ConnectionLimits) -> type[HttpToolsProtocol]:
    """The protocol class to give uvicorn (`Config(http=...)`) for these limits."""

    class LimitedHttpToolsProtocol(_LimitedProtocol):
        pass

    LimitedHttpToolsProtocol.limits = limits
    return LimitedHttpToolsProtocol


class _LimitedProtocol(HttpToolsProtocol):
    limits = ConnectionLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True
        self._head_bytes = 0
        self._header_count = 0
        self._header_bytes = 0  # names and values (+4 each), as parsed
        self._refusal = ""
        self._deadline = 0.0  # loop time by which the current phase must progress
        self._watching = False  # whether the current phase has a deadline at all
        self._watch: asyncio.TimerHandle | None = None
        self._watch_at = 0.0  # when `_watch` fires

    # ------------------------------------------------------------ phases

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._expect_head()

    def _expect_head(self) -> None:
        self._in_head = True
        self._head_bytes = 0
        self._header_count = 0
        self._header_bytes = 0
        self._arm(self.limits.head_timeout)

    def _arm(self, seconds: float) -> None:
        self._deadline = deadline = self.loop.time() + seconds
        self._watching = True
        if self._watch is not None and self._watch_at <= deadline:
            return  # it fires first and looks again at the deadline
        if self._watch is not None:  # a shorter limit than the one it was set for
            self._watch.cancel()
        self._watch_at = deadline
        self._watch = self.loop.call_at(deadline, self._on_watch)

    def _disarm(self) -> None:
        self._watching = False  # the timer, if set, lapses when it fires

    def _on_watch(self) -> None:
        self._watch = None
        if not self._watching or self.transport.is_closing():
            return
        if self.loop.time() < self._deadline:  # progress was made: look again later
            self._watch_at = self._deadline
            self._watch = self.loop.call_at(self._deadline, self._on_watch)
            return
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._expect_head()  # uvicorn's keep-alive timer also runs: whichever is first

    # ------------------------------------------------------------ parser callbacks

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
        elif self._watch is not None:  # reading a body: it made progress
            self._deadline = self.loop.time() + self.limits.body_timeout
        super().data_received(data)
        if self._in_head and self._head_bytes > self.limits.max_head_bytes \
                and not self.transport.is_closing():
            self._refuse(f"the request head exceeds {self.limits.max_head_bytes} bytes")

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > self.limits.max_head_bytes:
            self._refusal = f"the request line exceeds {self.limits.max_head_bytes} bytes"
            raise _HeadTooLarge

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > self.limits.max_headers:
            self._refusal = f"more than {self.limits.max_headers} request headers"
            raise _HeadTooLarge
        self._header_bytes += len(name) + len(value) + 4
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        if len(self.url) + self._header_bytes > self.limits.max_head_bytes:
            self._refusal = f"the request head exceeds {self.limits.max_head_bytes} bytes"
            raise _HeadTooLarge
        self._in_head = False
        super().on_headers_complete()
        self._arm(self.limits.body_timeout)
        cycle = self.cycle
        if cycle is not None:
            cycle.transport = _HeadHolder(self.transport, cycle)  # type: ignore[assignment]

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def send_400_response(self, msg: str) -> None:
        if self._refusal:  # one of our limits stopped the parser
            self._refuse(self._refusal)
            return
        super().send_400_response(msg)

    def _refuse(self, reason: str) -> None:
        self._disarm()
        body = ('{"error":"Request Header Fields Too Large: ' + reason + '"}').encode()
        self.transport.write(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
            b"content-type: application/json\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n"
            b"connection: close\r\n\r\n" + body
        )
        self.transport.close()


class _HeadHolder:
    """The transport as one response cycle sees it: the head of a response whose body
    has a known length is held back and written with the first bytes of that body.

    Only a head announcing a body is held (a `Content-Length` above zero, not a `HEAD`
    request, not chunked): the app sends that body next, so the head waits for no more
    than the app's next `send`. Anything else (a chunked stream's head, `100 Continue`)
    is written at once, and closing writes what is held first. A large body is not
    copied to join it: the two go in two writes, as before.
    """

    __slots__ = ("_transport", "_cycle", "_held", "_head_done")

    def __init__(self, transport: asyncio.Transport, cycle: Any) -> None:
        self._transport = transport
        self._cycle = cycle
        self._held: bytes | None = None
        self._head_done = False

    def write(self, data: bytes) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if len(data) <= JOIN_LIMIT:
                self._transport.write(held + data)
                return
            self._transport.write(held)
        elif not self._head_done and self._cycle.response_started:
            self._head_done = True  # the cycle writes its head in the send that starts it
            cycle = self._cycle
            if (cycle.chunked_encoding is False and cycle.expected_content_length > 0
                    and cycle.scope["method"] != "HEAD"):
                self._held = data
                return
        self._transport.write(data)

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def close(self) -> None:
        if self._held is not None:
            self._transport.write(self._held)
            self._held = None
        self._transport.close()
