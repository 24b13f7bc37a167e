"""The HTTP connection and its request cycle (`cogserve.http.connection`, `.cycle`), in
process: a fake transport, uvicorn's real Config and ServerState, bytes in and bytes out."""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from uvicorn.server import ServerState

from cogserve.http.connection import connection_class
from cogserve.http.limits import ConnectionLimits

from .helpers import run

DATE = [(b"date", b"Tue, 24 Nov 2026 19:00:00 GMT")]
POST = (b"POST /p HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 2\r\n\r\n{}")


class Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False
        self.paused = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5555), "sockname": ("127.0.0.1", 80)}.get(name,
                                                                                    default)

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


async def echo(scope: Any, receive: Any, send: Any) -> None:
    """Answers with the client address and the body it read, as JSON with a length."""
    if scope["type"] != "http":
        return
    message = await receive()
    body = b'{"client":"%s","got":%s}' % (scope["client"][0].encode(), message["body"] or b"0")
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def connect(app: Any = echo, keep_alive: float = 5.0,
            limits: ConnectionLimits | None = None) -> tuple[Any, Transport]:
    config = uvicorn.Config(app, lifespan="off", timeout_keep_alive=keep_alive,  # type: ignore[arg-type]
                            forwarded_allow_ips="127.0.0.1", access_log=False)
    state = ServerState()
    state.default_headers = DATE
    protocol = connection_class(limits or ConnectionLimits())(config, state, {})
    transport = Transport()
    protocol.connection_made(transport)
    return protocol, transport


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def posted(app: Any = echo, keep_alive: float = 5.0,
                 limits: ConnectionLimits | None = None) -> tuple[Any, Transport]:
    """A connection (`connect`) that was sent POST and has answered what it could."""
    protocol, transport = connect(app, keep_alive, limits)
    protocol.data_received(POST)
    await settle()
    return protocol, transport


def test_a_json_answer_is_one_write_of_head_and_body() -> None:
    async def body() -> None:
        protocol, transport = await posted()
        assert transport.writes == [
            b"HTTP/1.1 200 OK\r\ndate: Tue, 24 Nov 2026 19:00:00 GMT\r\n"
            b"content-type: application/json\r\ncontent-length: 31\r\n\r\n"
            b'{"client":"127.0.0.1","got":{}}']
        assert not transport.closed
    run(body)


def test_head_is_written_without_a_body_and_pipelined_requests_are_answered_in_order() -> None:
    async def body() -> None:
        protocol, transport = connect()
        protocol.data_received(POST + b"HEAD /p HTTP/1.1\r\nHost: x\r\n\r\n" + POST)
        for _ in range(5):
            await settle()
        heads = [w.split(b"\r\n")[0] for w in transport.writes]
        assert heads == [b"HTTP/1.1 200 OK"] * 3
        assert transport.writes[1].endswith(b"\r\n\r\n")  # HEAD: no body
        assert transport.writes[0] == transport.writes[2]
    run(body)


def test_a_forwarded_client_is_trusted_from_localhost_and_others_keep_their_address() -> None:
    async def body() -> None:
        protocol, transport = connect()
        protocol.data_received(POST.replace(b"Host: x\r\n", b"Host: x\r\nX-Forwarded-For: "
                                            b"10.1.2.3\r\n"))
        await settle()
        protocol.data_received(POST)
        await settle()
        assert b'"client":"10.1.2.3"' in transport.writes[0]
        assert b'"client":"127.0.0.1"' in transport.writes[1]
    run(body)


def test_an_idle_kept_alive_connection_is_closed_after_the_keep_alive_timeout() -> None:
    async def body() -> None:
        protocol, transport = await posted(keep_alive=0.05)
        assert not transport.closed
        await asyncio.sleep(0.15)
        assert transport.closed
    run(body)


def test_the_next_requests_first_bytes_give_it_the_head_timeout_not_the_keep_alive() -> None:
    async def body() -> None:
        limits = ConnectionLimits(head_timeout=0.3)
        protocol, transport = await posted(keep_alive=0.05, limits=limits)
        protocol.data_received(b"POST /p HTTP/1.1\r\n")  # a head that is slow to come
        await asyncio.sleep(0.15)
        assert not transport.closed  # past the keep-alive timeout, within the head's
        await asyncio.sleep(0.3)
        assert transport.closed  # the head never came whole
    run(body)


def test_expect_100_continue_is_answered_before_the_body_is_read() -> None:
    async def body() -> None:
        protocol, transport = connect()
        protocol.data_received(POST.replace(b"Host: x\r\n", b"Host: x\r\nExpect: 100-continue"
                                            b"\r\n").replace(b"{}", b""))
        await settle()
        assert transport.writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]
        protocol.data_received(b"{}")
        await settle()
        assert transport.writes[1].endswith(b'"got":{}}')
    run(body)


def test_an_app_that_fails_after_its_head_has_the_head_written_and_the_connection_closed(
) -> None:
    async def failing(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"5")]})
        raise RuntimeError("boom")

    async def body() -> None:
        protocol, transport = await posted(app=failing)
        assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
        assert transport.closed
    run(body)


def test_a_prediction_waited_on_hears_of_the_lost_connection_at_once() -> None:
    from cogserve.http.disconnect import wait_or_disconnect

    class Prediction:
        def __init__(self) -> None:
            self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def body() -> None:
        seen: dict[str, Any] = {}

        async def app(scope: Any, receive: Any, send: Any) -> None:
            await receive()
            seen["prediction"] = prediction = Prediction()
            seen["result"] = await wait_or_disconnect(prediction, receive)

        protocol, transport = await posted(app=app)
        assert "result" not in seen  # waiting
        protocol.connection_lost(None)
        await settle()
        assert seen["result"] is False
        assert not seen["prediction"].done.done()
        assert not seen["prediction"].done._callbacks  # its callback was taken off

        protocol, transport = await posted(app=app)
        seen["prediction"].done.set_result(None)
        await settle()
        assert seen["result"] is True
    run(body)


def test_send_json_is_one_write_and_waits_for_a_paused_transport() -> None:
    from cogserve.http.responses import send_json

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send_json(send, 201, {"a": 1}, [(b"x-extra", b"yes")])

    async def body() -> None:
        protocol, transport = await posted(app=app)
        assert transport.writes == [
            b"HTTP/1.1 201 Created\r\ndate: Tue, 24 Nov 2026 19:00:00 GMT\r\n"
            b"content-type: application/json\r\ncontent-length: 7\r\nx-extra: yes\r\n\r\n"
            b'{"a":1}']
        protocol.pause_writing()  # the client reads slowly: the answer waits
        protocol.data_received(POST)
        await settle()
        assert len(transport.writes) == 1
        protocol.resume_writing()
        await settle()
        assert transport.writes[1] == transport.writes[0]
    run(body)


def test_header_names_are_written_lowercase_and_bad_values_refused_every_time() -> None:
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        bad = scope["path"] == "/bad"
        try:
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"X-Name", b"a\nb" if bad else b"fine"), (b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
        except RuntimeError as exc:
            seen.append(str(exc))
            raise

    async def body() -> None:
        for path in (b"/p", b"/p", b"/bad", b"/bad"):
            protocol, transport = connect(app=app)
            protocol.data_received(POST.replace(b"/p ", path + b" "))
            await settle()
            if path == b"/p":
                assert b"\r\nx-name: fine\r\n" in transport.writes[0]
        assert seen == ["Invalid HTTP header value."] * 2
    run(body)
