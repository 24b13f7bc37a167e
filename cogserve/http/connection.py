"""cogserve's HTTP/1.1 connection: an asyncio protocol on httptools (llhttp) that uvicorn
runs through its public `Config(http=<protocol class>)`, with the limits a server on an
open port needs.

httptools accepts a request head of any size and any number of headers, and an HTTP
server that closes an idle connection only after a response holds for ever a 1 MiB
header, 100,000 headers, or a client that opens connections and trickles a byte now and
then (slowloris). This connection, per `ConnectionLimits`:

- answers a request head over `max_head_bytes` (request line + headers) or with more
  than `max_headers` headers with 431 and closes the connection, as the reference does;
- closes a connection whose request head has not arrived whole `head_timeout` seconds
  after it opened (or after the previous response);
- closes a connection whose request body stops arriving for `body_timeout` seconds (a
  lying Content-Length); the handler sees a disconnect;
- closes a connection kept alive `timeout_keep_alive` seconds (uvicorn's setting) after
  its last response without a byte of the next request.

Everything is counted in the parser's callbacks, and one timer per connection is
re-armed only when it fires (a phase that needs no watch just marks it idle), so a
normal request pays a few integer additions and no timer of its own.

What uvicorn gives it, and all it relies on: the constructor's arguments (`config`,
`server_state`, `app_state` and `_loop`, the keywords uvicorn's Server passes to the
class given as `http=`), `Config`'s settings (`loaded_app`, `timeout_keep_alive`, `root_path`), and
`ServerState`'s `connections` and `tasks` (which uvicorn's shutdown waits on; it calls
`shutdown()` on each connection), `default_headers` (Date, made once a second) and
`total_requests` (for `--limit-max-requests`). No name of uvicorn's HTTP protocols is
used: a uvicorn release that rewrites them leaves this connection as it is. Requests
that ask to switch protocols are served as plain HTTP (no route speaks WebSocket).
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections import deque
from typing import TYPE_CHECKING, Any

import httptools
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from cogserve.http.cycle import Cycle, FlowControl, log
from cogserve.http.limits import ConnectionLimits

if TYPE_CHECKING:
    from uvicorn import Config
    from uvicorn.server import ServerState

_FORWARDED = (b"x-forwarded-for", b"x-forwarded-proto")  # what the proxy middleware reads


class _HeadTooLarge(Exception):
    """Raised inside a parser callback to stop parsing a head over the limits."""


def connection_class(limits: ConnectionLimits) -> type[HttpConnection]:
    """The protocol class to give uvicorn (`Config(http=...)`) for these limits."""

    class LimitedHttpConnection(HttpConnection):
        pass

    LimitedHttpConnection.limits = limits
    return LimitedHttpConnection


class HttpConnection(asyncio.Protocol):
    limits = ConnectionLimits()

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        # `_loop`: uvicorn's Server passes it (None but for its own tests) to every class
        # given as `http=`, since 0.30
        if not config.loaded:
            config.load()
        self.loop = _loop or asyncio.get_running_loop()
        self.parser = httptools.HttpRequestParser(self)
        try:  # answer the first of pipelined requests whose last one closes the connection
            self.parser.set_dangerous_leniencies(lenient_data_after_close=True)
        except AttributeError:  # httptools < 0.6.3
            pass
        app = config.loaded_app
        self.app = app
        # the app past uvicorn's proxy-headers middleware (`Config(proxy_headers=True)`),
        # for a request with none of the headers it reads
        self.direct_app = app.app if type(app) is ProxyHeadersMiddleware else app
        self.root_path = config.root_path
        self.asgi = {"version": config.asgi_version, "spec_version": "2.3"}
        self.timeout_keep_alive = config.timeout_keep_alive
        self.app_state = app_state
        self.server_state = server_state
        self.tasks = server_state.tasks
        self.transport: asyncio.Transport = None  # type: ignore[assignment]
        self.flow: FlowControl = None  # type: ignore[assignment]
        self.server: tuple[str, int] | None = None
        self.client: tuple[str, int] | None = None
        self.scheme = "http"
        self.pipeline: deque[tuple[Cycle, Any]] = deque()
        # the request being parsed
        self.url = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.scope: dict[str, Any] = {}
        self.expect_100_continue = False
        self.forwarded = False  # the request has a header the proxy middleware reads
        self.cycle: Cycle | None = None
        # the limits' counts and the one timer
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

    # ------------------------------------------------------------ the connection

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self.server_state.connections.add(self)  # type: ignore[arg-type]
        self.transport = transport
        self.flow = FlowControl(transport)
        self.server = _address(transport.get_extra_info("sockname"))
        self.client = _address(transport.get_extra_info("peername"))
        if transport.get_extra_info("sslcontext"):
            self.scheme = "https"
        self._expect_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self.server_state.connections.discard(self)
        self._watching = False
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        if self.flow is not None:
            self.flow.resume_writing()
        if exc is None:
            self.transport.close()
        cycle = self.cycle
        if cycle is not None:
            cycle.lost()

    def eof_received(self) -> None:
        pass  # half-closed: the response is still written

    def pause_writing(self) -> None:
        self.flow.pause_writing()

    def resume_writing(self) -> None:
        self.flow.resume_writing()

    def shutdown(self) -> None:
        """uvicorn's graceful shutdown: close when idle, else after this response."""
        cycle = self.cycle
        if cycle is None or cycle.response_complete:
            self.transport.close()
        else:
            cycle.keep_alive = False

    # ------------------------------------------------------------ phases and their watch

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

    def _on_watch(self) -> None:
        self._watch = None
        if not self._watching or self.transport.is_closing():
            return
        if self.loop.time() < self._deadline:  # progress was made: look again later
            self._watch_at = self._deadline
            self._watch = self.loop.call_at(self._deadline, self._on_watch)
            return
        self.transport.close()  # a head or body too slow, or kept alive too long idle

    def on_response_complete(self) -> None:
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        flow = self.flow
        if flow.read_paused:
            flow.resume_reading()
        if self.pipeline:  # a pipelined request waited for this response
            cycle, app = self.pipeline.pop()
            self._start(cycle, app)
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

    def _start(self, cycle: Cycle, app: Any) -> None:
        task = self.loop.create_task(cycle.run_asgi(app))
        tasks = self.tasks
        task.add_done_callback(tasks.discard)
        tasks.add(task)

    # ------------------------------------------------------------ bytes in, parser callbacks

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
        except httptools.HttpParserUpgrade:
            # no route switches protocols: the head was served as plain HTTP, and what
            # follows it is not read (`http.responses.UPGRADE_BODY_LOST`)
            log.warning("Unsupported upgrade request.")
        except httptools.HttpParserError:
            if self._refusal:  # one of our limits stopped the parser
                self._refuse(self._refusal)
            else:
                msg = "Invalid HTTP request received."
                log.warning(msg)
                self._send_400(msg)
            return
        if self._in_head and self._head_bytes > self.limits.max_head_bytes \
                and not self.transport.is_closing():
            self._refuse(f"the request head exceeds {self.limits.max_head_bytes} bytes")

    def on_message_begin(self) -> None:
        self.url = b""
        self.expect_100_continue = False
        self.forwarded = False
        self.headers = []
        self.scope = {
            "type": "http",
            "asgi": self.asgi,
            "http_version": "1.1",
            "server": self.server,
            "client": self.client,
            "scheme": self.scheme,
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
            self.forwarded = True
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
        parsed_url = httptools.parse_url(self.url)
        raw_path = parsed_url.path
        path = raw_path.decode("ascii")
        if "%" in path:
            path = urllib.parse.unquote(path)
        root_path = self.root_path
        scope["path"] = root_path + path if root_path else path
        scope["raw_path"] = root_path.encode("ascii") + raw_path if root_path else raw_path
        scope["query_string"] = parsed_url.query or b""
        app = self.app if self.forwarded else self.direct_app
        existing = self.cycle
        self.cycle = cycle = Cycle(
            scope, self.transport, self.flow, self.server_state.default_headers,
            self.expect_100_continue, http_version != "1.0" and parser.should_keep_alive(),
            self.on_response_complete)
        self._arm(self.limits.body_timeout)
        if existing is None or existing.response_complete:
            self._start(cycle, app)
        else:  # pipelined: it waits for the response before it
            self.flow.pause_reading()
            self.pipeline.appendleft((cycle, app))

    def on_body(self, body: bytes) -> None:
        cycle = self.cycle
        assert cycle is not None
        if not cycle.response_complete:
            cycle.body_received(body)  # httptools made it a bytes object of its own

    def on_message_complete(self) -> None:
        self._watching = False  # the timer, if set, lapses when it fires
        cycle = self.cycle
        assert cycle is not None
        if not cycle.response_complete:
            cycle.more_body = False
            cycle.message_event.set()

    # ------------------------------------------------------------ refusals

    def _send_400(self, msg: str) -> None:
        self._close_with(b"400 Bad Request", b"text/plain; charset=utf-8", msg.encode())

    def _refuse(self, reason: str) -> None:
        body = ('{"error":"Request Header Fields Too Large: ' + reason + '"}').encode()
        self._close_with(b"431 Request Header Fields Too Large", b"application/json", body)

    def _close_with(self, status: bytes, content_type: bytes, body: bytes) -> None:
        self._watching = False
        self.transport.write(
            b"HTTP/1.1 " + status + b"\r\ncontent-type: " + content_type +
            b"\r\ncontent-length: " + str(len(body)).encode() +
            b"\r\nconnection: close\r\n\r\n" + body)
        self.transport.close()


def _address(info: Any) -> tuple[str, int] | None:
    """A socket's address as the ASGI scope has it: (host, port), None for a Unix socket."""
    if isinstance(info, tuple | list) and len(info) >= 2:
        return str(info[0]), int(info[1])
    return None

