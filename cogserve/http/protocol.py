"""uvicorn's httptools protocol with the limits a server on an open port needs, and a
leaner request cycle.

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

Everything is counted in the parser's callbacks, and one timer per connection is
re-armed only when it fires (a phase that needs no watch just marks it idle), so a
normal request pays a few integer additions and no timer of its own. That timer also
keeps uvicorn's keep-alive timeout (an idle connection is closed `timeout_keep_alive`
seconds after its last response, until the next request's first bytes), for which
uvicorn made and cancelled a timer per request.

The per-request path is uvicorn's (`HttpToolsProtocol`'s parser callbacks and its
`RequestResponseCycle`), written out here as one class per side with the same
behaviour and less per request (every request pays it, a 409 refusal as much as a
prediction): the callbacks do their own work without a second call into uvicorn's;
`Cycle.send` writes a response's head and its body in one write() (uvicorn writes the
status line and headers as soon as the app starts its response and the body when it
sends it: two system calls, and two wake-ups of the client, for every JSON answer sent
whole); the server's default headers (Date), checked once per second rather than per
response; and a request without `X-Forwarded-For`/`X-Forwarded-Proto` goes to the app
past uvicorn's proxy-headers middleware, which would leave its scope as it is.
"""

from __future__ import annotations

import asyncio
import contextvars
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httptools
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT, FlowControl, service_unavailable
from uvicorn.protocols.http.httptools_impl import (
    HEADER_RE,
    HEADER_VALUE_RE,
    STATUS_LINE,
    HttpToolsProtocol,
)
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

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
_FORWARDED = (b"x-forwarded-for", b"x-forwarded-proto")  # what the proxy middleware reads


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
        self._idle = False  # kept alive after a response, no byte of the next request yet
        self._head_deadline = 0.0  # while idle: when the next head must have arrived
        self._forwarded = False  # the request has a header the proxy middleware reads
        app = self.app
        # the app past uvicorn's proxy-headers middleware (`Config(proxy_headers=True)`),
        # for a request with none of the headers it reads
        self._direct_app = app.app if type(app) is ProxyHeadersMiddleware else app
        self._fresh_contexts = bool(getattr(self.config, "reset_contextvars", False))

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
        self._schedule(deadline)

    def _schedule(self, deadline: float) -> None:
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
        self.transport.close()  # a head or body too slow, or kept alive too long idle

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        super().connection_lost(exc)
        cycle: Any = self.cycle
        if cycle is not None and cycle.disconnected and cycle.on_disconnect is not None:
            cycle.on_disconnect()

    def on_response_complete(self) -> None:
        # uvicorn's, with its keep-alive timer kept by the watch
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        self._unset_keepalive_if_required()
        flow = self.flow
        if flow.read_paused:
            flow.resume_reading()
        if self.pipeline:  # a pipelined request waited for this response
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
            self._expect_head()
            return
        # kept alive: closed after `timeout_keep_alive` seconds without a byte, or after
        # `head_timeout` seconds without a whole head, whichever comes first
        self._in_head = True
        self._head_bytes = 0
        self._header_count = 0
        self._header_bytes = 0
        now = self.loop.time()
        self._head_deadline = now + self.limits.head_timeout
        keep_alive = now + self.timeout_keep_alive
        self._idle = keep_alive < self._head_deadline
        self._deadline = keep_alive if self._idle else self._head_deadline
        self._watching = True
        self._schedule(self._deadline)

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        if self._fresh_contexts:  # uvicorn's reset_contextvars
            task = self.loop.create_task(cycle.run_asgi(app), context=contextvars.Context())
        else:
            task = self.loop.create_task(cycle.run_asgi(app))
        tasks = self.tasks
        task.add_done_callback(tasks.discard)
        tasks.add(task)

    # ------------------------------------------------------------ parser callbacks

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
            if self._idle:  # the next request began: its head has until the head timeout
                self._idle = False
                self._deadline = self._head_deadline
        elif self._watch is not None:  # reading a body: it made progress
            self._deadline = self.loop.time() + self.limits.body_timeout
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            msg = "Invalid HTTP request received."
            self.logger.warning(msg)
            self.send_400_response(msg)
            return
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
        if self._in_head and self._head_bytes > self.limits.max_head_bytes \
                and not self.transport.is_closing():
            self._refuse(f"the request head exceeds {self.limits.max_head_bytes} bytes")

    def on_message_begin(self) -> None:
        self.url = b""
        self.expect_100_continue = False
        self._forwarded = False
        self.headers = []
        self.scope = {  # type: ignore[typeddict-item]
            "type": "http",
            "asgi": {"version": self.asgi_version, "spec_version": "2.3"},
            "http_version": "1.1",
            "server": self.server,
            "client": self.client,
            "scheme": self.scheme,  # type: ignore[typeddict-item]
            "root_path": self.root_path,
            "headers": self.headers,
            "state": self.app_state.copy(),
        }

    def on_url(self, url: bytes) -> None:
        self.url += url
        if len(self.url) > self.limits.max_head_bytes:
            self._refusal = f"the request line exceeds {self.limits.max_head_bytes} bytes"
            raise _HeadTooLarge

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > self.limits.max_headers:
            self._refusal = f"more than {self.limits.max_headers} request headers"
            raise _HeadTooLarge
        self._header_bytes += len(name) + len(value) + 4
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self.expect_100_continue = True
        elif name in _FORWARDED:
            self._forwarded = True
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        if len(self.url) + self._header_bytes > self.limits.max_head_bytes:
            self._refusal = f"the request head exceeds {self.limits.max_head_bytes} bytes"
            raise _HeadTooLarge
        self._in_head = False
        parser = self.parser
        scope = self.scope
        http_version = parser.get_http_version()
        scope["method"] = parser.get_method().decode("ascii")
        if http_version != "1.1":
            scope["http_version"] = http_version
        if parser.should_upgrade() and self._should_upgrade():
            return
        parsed_url = httptools.parse_url(self.url)
        raw_path = parsed_url.path
        path = raw_path.decode("ascii")
        if "%" in path:
            path = urllib.parse.unquote(path)
        root_path = self.root_path
        scope["path"] = root_path + path if root_path else path
        scope["raw_path"] = root_path.encode("ascii") + raw_path if root_path else raw_path
        scope["query_string"] = parsed_url.query or b""

        limit = self.limit_concurrency
        app: Any
        if limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit):
            app = service_unavailable
            self.logger.warning("Exceeded concurrency limit.")
        else:
            app = self.app if self._forwarded else self._direct_app

        existing = self.cycle
        self.cycle = cycle = Cycle(  # type: ignore[assignment]
            scope, self.transport, self.flow, self,
            http_version != "1.0" and parser.should_keep_alive())
        self._arm(self.limits.body_timeout)
        if existing is None or existing.response_complete:
            self._start_asgi_task(cycle, app)
        else:  # pipelined: it waits for the response before it
            self.flow.pause_reading()
            self.pipeline.appendleft((cycle, app))  # type: ignore[arg-type]

    def on_body(self, body: bytes) -> None:
        cycle: Cycle = self.cycle  # type: ignore[assignment]
        if cycle.response_complete or (self.parser.should_upgrade() and self._should_upgrade()):
            return
        cycle.body.append(body)  # httptools made it a bytes object of its own: kept as is
        cycle.body_size += len(body)
        if cycle.body_size > HIGH_WATER_LIMIT:
            self.flow.pause_reading()
        cycle.message_event.set()

    def on_message_complete(self) -> None:
        self._disarm()
        cycle = self.cycle
        if cycle.response_complete or (self.parser.should_upgrade() and self._should_upgrade()):
            return
        cycle.more_body = False
        cycle.message_event.set()

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


class _Signal:
    """asyncio.Event's part that the cycle uses (set, clear, wait), without its lock
    mixin: one per request, set by the parser callbacks, awaited by `receive`."""

    __slots__ = ("_set", "_waiter")

    def __init__(self) -> None:
        self._set = False
        self._waiter: asyncio.Future[None] | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        if not self._set:
            self._set = True
            waiter = self._waiter
            if waiter is not None:
                self._waiter = None
                if not waiter.done():
                    waiter.set_result(None)

    def clear(self) -> None:
        self._set = False

    async def wait(self) -> None:
        if self._set:
            return
        waiter = self._waiter
        if waiter is None or waiter.done():
            waiter = self._waiter = asyncio.get_running_loop().create_future()
        await waiter


class Cycle:
    """One request and its response: uvicorn's `RequestResponseCycle` (what the ASGI app
    sees: `receive`, `send`), with the head of a response whose body has a known length
    held back and written with the first bytes of that body.

    Only a head announcing a body is held (a `Content-Length` above zero, not a `HEAD`
    request, not chunked): the app sends that body next. Anything else (a chunked
    stream's head, a bodiless answer) is written at once; a large body is not copied to
    join it (two writes, as uvicorn's); a held head is written before the connection is
    closed under it (the app failed after starting its response).
    """

    __slots__ = ("scope", "transport", "flow", "protocol", "message_event", "on_response",
                 "disconnected", "keep_alive", "waiting_for_100_continue", "body",
                 "body_size", "more_body", "response_started", "response_complete",
                 "chunked_encoding", "expected_content_length", "_held", "status",
                 "on_disconnect")

    def __init__(self, scope: Any, transport: asyncio.Transport, flow: FlowControl,
                 protocol: _LimitedProtocol, keep_alive: bool) -> None:
        self.scope = scope
        self.transport = transport
        self.flow = flow
        self.protocol = protocol
        self.message_event = _Signal()
        self.on_response: Callable[[], None] = protocol.on_response_complete
        self.disconnected = False
        self.keep_alive = keep_alive
        self.waiting_for_100_continue = protocol.expect_100_continue
        # the body's pieces as the parser gave them, joined when the app receives them:
        # uvicorn appends each to a bytearray and copies that out, two copies of every
        # byte of a large body (and the bytearray's reallocations) where this makes one
        # or, for a piece received alone, none
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

    async def run_asgi(self, app: Any) -> None:
        try:
            result = await app(self.scope, self.receive, self.send)
        except BaseException as exc:
            self.protocol.logger.error("Exception in ASGI application\n", exc_info=exc)
            if not self.response_started:
                await self.send_500_response()
            else:
                self._close()
        else:
            if result is not None:
                self.protocol.logger.error(
                    "ASGI callable should return None, but returned '%s'.", result)
                self._close()
            elif not self.response_started and not self.disconnected:
                self.protocol.logger.error("ASGI callable returned without starting response.")
                await self.send_500_response()
            elif not self.response_complete and not self.disconnected:
                self.protocol.logger.error(
                    "ASGI callable returned without completing response.")
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
                                   f"'{message['type']}'.")
            self._start(message["status"], message.get("headers", ()))
        elif not self.response_complete:
            if kind != "http.response.body":
                raise RuntimeError(f"Expected ASGI message 'http.response.body', but got "
                                   f"'{message['type']}'.")
            self._body(message.get("body", b""), message.get("more_body", False))
        else:
            raise RuntimeError(f"Unexpected ASGI message '{message['type']}' sent, after "
                               "response already completed.")

    def respond(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> bool:
        """A whole response at once: what `send` does with its start and then its one
        body message, without the two messages and coroutines (the JSON answers of
        `http.responses.send_json`). False, having done nothing, when `send` is needed:
        a response already started, or writing paused (`send` waits for the drain)."""
        if self.response_started or (self.flow.write_paused and not self.disconnected):
            return False
        self.status = status
        if not self.disconnected:
            self._start(status, headers)
            self._body(body, False)
        return True

    def _start(self, status_code: int, headers: Any) -> None:
        self.response_started = True
        self.waiting_for_100_continue = False
        protocol = self.protocol
        if protocol.access_log:  # uvicorn's own access log (cogserve turns it off)
            scope = self.scope
            protocol.access_logger.info(
                '%s - "%s %s HTTP/%s" %d', get_client_addr(scope), scope["method"],
                get_path_with_query_string(scope), scope["http_version"], status_code)
        defaults = protocol.server_state.default_headers
        default_head = _default_head(defaults)
        if default_head is None:
            content = [STATUS_LINE[status_code]]
            headers = defaults + list(headers)
        else:
            content = [STATUS_LINE[status_code], default_head]
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
            if HEADER_RE.search(name):
                raise RuntimeError("Invalid HTTP header name.")
            if HEADER_VALUE_RE.search(value):
                raise RuntimeError("Invalid HTTP header value.")
            lowered = name.lower()
            if lowered == b"content-length" and self.chunked_encoding is None:
                self.expected_content_length = int(value.decode())
                self.chunked_encoding = False
            elif lowered == b"transfer-encoding" and value.lower() == b"chunked":
                self.expected_content_length = 0
                self.chunked_encoding = True
            elif lowered == b"connection":
                connection = [token.lower().strip() for token in value.split(b",")]
                if b"close" in connection:
                    self.keep_alive = False
                    has_connection_close = True
            elif lowered not in _SHAPING and len(_checked_lines) < _CHECKED_LINES:
                _checked_lines[(name, value)] = lowered + b": " + value + b"\r\n"
            content.extend((lowered, b": ", value, b"\r\n"))
        if not self.keep_alive and not has_connection_close:
            content.append(b"connection: close\r\n")
        head_only = self.scope["method"] == "HEAD"
        if self.chunked_encoding is None and not head_only and status_code not in (204, 304):
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
            if not event._set:
                await event.wait()
            event._set = False
        if self.disconnected or self.response_complete:
            return {"type": "http.disconnect"}
        pieces = self.body
        if len(pieces) == 1:
            body = pieces[0]
        else:
            body = b"".join(pieces)
        self.body = []
        self.body_size = 0
        return {"type": "http.request", "body": body, "more_body": self.more_body}


def _nothing() -> None:
    pass


_checked: tuple[list[tuple[bytes, bytes]] | None, bytes | None] = (None, None)
_SHAPING = (b"content-length", b"transfer-encoding", b"connection")
# response header lines checked once (name and value as the app gave them -> the line
# written, name lowercased): Content-Type and the like recur on every answer; a header
# that shapes the response (a length, chunking, Connection) is read each time
_checked_lines: dict[tuple[bytes, bytes], bytes] = {}
_CHECKED_LINES = 1024  # distinct lines kept, at most


def _default_head(headers: list[tuple[bytes, bytes]]) -> bytes | None:
    """The server's default headers (Date, and any of uvicorn's `--header`) as head
    bytes, checked and joined once per list (uvicorn makes a new one once per second);
    None when one of them shapes the response (a length, chunking, `Connection`), which
    the cycle then reads with the app's."""
    global _checked
    if _checked[0] is headers:
        return _checked[1]
    parts: list[bytes] = []
    joined: bytes | None = None
    for name, value in headers:
        if HEADER_RE.search(name):
            raise RuntimeError("Invalid HTTP header name.")
        if HEADER_VALUE_RE.search(value):
            raise RuntimeError("Invalid HTTP header value.")
        if name.lower() in _SHAPING:
            break
        parts.extend((name.lower(), b": ", value, b"\r\n"))
    else:
        joined = b"".join(parts)
    _checked = (headers, joined)
    return joined
