"""File-input downloads are bounded: a maximum size, a total deadline, and a cancel
stops a download in progress (without restarting the worker). Partial files go."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from harness import Server

ASYNC = {"Prefer": "respond-async"}


class Streams:
    """`/zeros` sends zeros for ever (no Content-Length); `/drip` one byte per 0.2 s;
    `/big` claims a Content-Length of 10 GB. Counts bytes sent and connections ended."""

    def __init__(self) -> None:
        self.sent = 0
        self.closed = threading.Event()
        streams = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                self.send_response(200)
                self.send_header("content-type", "application/octet-stream")
                if self.path == "/big":
                    self.send_header("content-length", str(10 ** 10))
                self.end_headers()
                chunk = b"\0" * 65536 if self.path != "/drip" else b"\0"
                deadline = time.monotonic() + 60  # never longer than this
                try:
                    while time.monotonic() < deadline:
                        self.wfile.write(chunk)
                        streams.sent += len(chunk)
                        if self.path == "/drip":
                            time.sleep(0.2)
                except OSError:
                    pass
                streams.closed.set()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def streams() -> Iterator[Streams]:
    s = Streams()
    yield s
    s.close()


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    env = {"COGSERVE_DOWNLOAD_MAX_BYTES": str(4 << 20), "COGSERVE_DOWNLOAD_DEADLINE": "2"}
    with Server("files_in", env=env) as s:
        yield s


def _temp_files(server: Server) -> list[str]:
    return [str(p) for p in server.own_tmp.rglob("*") if p.is_file()]


@pytest.mark.parametrize("path,phrase", [
    ("/zeros", "exceeds the limit of 4194304 bytes (COGSERVE_DOWNLOAD_MAX_BYTES)"),
    ("/big", "is 10000000000 bytes; the limit is 4194304"),
    ("/drip", "took longer than COGSERVE_DOWNLOAD_DEADLINE"),
])
def test_a_download_over_its_bounds_fails_the_prediction(server, streams, path, phrase):
    r = server.client.post("/predictions", json={"input": {"p": streams.url + path}})
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "failed" and phrase in body["error"], body
    assert _temp_files(server) == []
    assert server.predict(text="next").json()["status"] == "succeeded"


def test_a_cancel_stops_a_download_in_progress(serve, streams):
    server = serve("files_in", env={"COGSERVE_DOWNLOAD_MAX_BYTES": "0",
                                    "COGSERVE_CANCEL_TIMEOUT": "30"})
    [worker] = server.worker_pids()
    streams.closed.clear()
    before = streams.sent
    r = server.client.post("/predictions", headers=ASYNC,
                           json={"id": "dl", "input": {"p": streams.url + "/zeros"}})
    assert r.status_code == 202
    deadline = time.monotonic() + 10
    while streams.sent - before < (8 << 20) and time.monotonic() < deadline:
        time.sleep(0.02)
    answer = server.client.post("/predictions/dl/cancel")
    assert answer.json()["status"] == "canceled"
    assert streams.closed.wait(10)  # the worker hung up
    assert server.worker_pids() == [worker]  # not by a restart: the cancel stopped it
    assert _temp_files(server) == []
