"""Hostile HTTP against one shared server: odd keys, huge and numerous headers, lying
Content-Length, slow clients. Every answer is a clear 4xx, never a 500, and the server
keeps serving a normal client throughout."""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from harness import MODELS, Server

HELLO = MODELS.parent.parent / "examples" / "hello-world"


@pytest.fixture(scope="module")
def hello() -> Iterator[Server]:
    # short read timeouts so the slow-client tests end quickly
    with Server(HELLO, env={"COGSERVE_HEADER_TIMEOUT": "1", "COGSERVE_BODY_TIMEOUT": "1"}) \
            as server:
        yield server


@pytest.mark.parametrize("key", ["¹", "٣", "99999999999999999999", "a.0", "0"])
@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_unknown_input_keys_get_422_naming_the_key(hello, key, method):
    path = "/predictions" if method == "POST" else "/predictions/odd-key"
    response = hello.client.request(method, path, json={"input": {"name": "a", key: 1}})
    assert response.status_code == 422, response.text
    [item] = response.json()["detail"]
    assert item["loc"] == ["body", "input", key]
    assert "was unexpected" in item["msg"]


def _raw(server: Server, data: bytes, timeout: float = 10.0) -> bytes:
    """Send raw bytes and read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


def _still_serves(server: Server) -> None:
    # A new connection each time: the server closes a keep-alive connection that stays idle
    # past its 1 s header timeout, and a pooled one could be reused just as it is closed.
    with httpx.Client(base_url=server.url, timeout=60.0) as client:
        response = client.post("/predictions", json={"input": {"name": "ok"}})
    assert response.status_code == 200 and response.json()["output"] == "hello ok"


@pytest.mark.parametrize("head", [
    b"X-Big: " + b"a" * (1 << 20) + b"\r\n",  # one 1 MiB header
    b"".join(b"X-H%d: v\r\n" % i for i in range(101)),  # 101 headers
    b"X-Many: " + b"b" * 70_000 + b"\r\n",  # just over the 64 KiB head
])
def test_oversized_or_numerous_headers_get_431(hello, head):
    answer = _raw(hello, b"GET /health-check HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert b"Request Header Fields Too Large" in answer
    _still_serves(hello)


def test_a_long_url_gets_431(hello):
    answer = _raw(hello, b"GET /" + b"p" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]


UPGRADE = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
           "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}


@pytest.mark.parametrize("upgrade", [UPGRADE, {"Upgrade": "h2c", "Connection": "Upgrade"}])
def test_an_upgrade_request_is_answered_as_plain_http(hello, upgrade):
    # no route switches protocols: as the reference does, the request is served as HTTP
    # (a WebSocket upgrade once got a 500, "ASGI callable returned without completing
    # handshake"); a body sent with one never arrives (httptools stops at the head), which
    # gets a 400 that says so rather than "empty document"
    assert hello.client.get("/health-check", headers=upgrade).json()["status"] == "READY"
    response = hello.client.post("/predictions", headers=upgrade, json={"input": {"name": "w"}})
    assert response.status_code == 400
    assert "Upgrade header" in response.text
    _still_serves(hello)


def test_normal_headers_are_served(hello):
    headers = {f"x-h{i}": "v" * 100 for i in range(90)}
    response = hello.client.get("/health-check", headers=headers)
    assert response.status_code == 200


def _closed_by_server(sock: socket.socket, trickle: bytes = b"") -> bool:
    """Keep trickling bytes (a slowloris) until the server closes; False on our own bound."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            if trickle:
                sock.sendall(trickle)
            ready, _, _ = select.select([sock], [], [], 0.2)
            if ready and sock.recv(65536) == b"":
                return True
        except (BrokenPipeError, ConnectionResetError):
            return True
    return False


def test_slowloris_connections_are_closed_and_others_served(hello):
    slow = [socket.create_connection(("127.0.0.1", hello.port)) for _ in range(20)]
    idle = socket.create_connection(("127.0.0.1", hello.port))  # sends nothing at all
    try:
        for sock in slow:
            sock.sendall(b"POST /predictions HTTP/1.1\r\nHost: x\r\n")
        _still_serves(hello)  # while they hang on
        assert all(_closed_by_server(sock, b"X") for sock in slow[:3])  # still trickling
        assert all(_closed_by_server(sock) for sock in slow[3:])
        assert _closed_by_server(idle)
        _still_serves(hello)
    finally:
        for sock in [*slow, idle]:
            sock.close()


def test_a_body_shorter_than_its_content_length_is_not_waited_for_forever(hello):
    with socket.create_connection(("127.0.0.1", hello.port)) as sock:
        sock.sendall(b"POST /predictions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                     b"\r\nContent-Length: 100\r\n\r\n{\"input\":")
        assert _closed_by_server(sock)
    _still_serves(hello)
    assert hello.health()["status"] == "READY"


@pytest.mark.parametrize("body,status", [(b"", 400), (b"  ", 400), (b"null", 422)])
def test_an_empty_json_body_is_not_json_and_null_is_not_an_object(hello, body, status):
    """As coglet answers: a JSON Content-Type promises a document (a request with no
    Content-Type at all is the empty request)."""
    response = hello.client.post("/predictions", content=body,
                                 headers={"content-type": "application/json"})
    assert response.status_code == status, response.text
    assert response.text.startswith("Failed to parse the request body as JSON: " if status == 400
                                    else "Failed to deserialize the JSON body into the target "
                                         "type: invalid type: null")


def test_long_data_url_inputs_are_not_echoed_whole(serve):
    server = serve("files_in")
    payload = "A" * 40_000
    url = "data:text/plain;base64," + payload
    body = server.client.post("/predictions", json={"input": {"p": url, "ps": [url, "data:,x"]}}
                              ).json()
    assert body["status"] == "succeeded", body
    assert len(body["output"]["p"]["data"]) == 30_000  # the model got the whole file
    assert body["input"]["p"] == "data:text/plain;base64,<40000 characters omitted>"
    assert body["input"]["ps"] == ["data:text/plain;base64,<40000 characters omitted>",
                                   "data:,x"]  # a short one is echoed as sent


def test_a_large_body_bound_for_409_is_refused_before_it_is_read(serve):
    server = serve("sleepy")

    holder = threading.Thread(target=lambda: server.client.post(
        "/predictions", json={"id": "holder", "input": {"sleep": 60}}, timeout=60))
    holder.start()
    server.wait_for("BUSY")
    big = 64 << 20
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"POST /predictions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                     b"\r\nContent-Length: %d\r\n\r\n{\"input\":{\"text\":\"" % big)
        # nothing more is sent: the answer must come without the 64 MiB
        answer = b""
        while b"}" not in answer.partition(b"\r\n\r\n")[2]:  # head and body may come apart
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 409 "), answer[:200]
    assert b"At capacity" in answer
    assert server.client.post("/predictions/holder/cancel").json()["status"] == "canceled"
    holder.join(timeout=30)
