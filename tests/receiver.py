"""A real local webhook receiver: a threaded http.server that records what it is sent.

Behaviour per test: answer 200, fail the first N attempts (with a status, or by
dropping the connection), or never answer at all (until the test ends).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SETTLE = 0.2  # seconds: long enough for a delivery already on its way to arrive


@dataclass
class Hit:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw: bytes  # the body as sent (what a signature covers)
    answered: int | None  # the status we answered with; None if we failed the attempt


class Receiver:
    def __init__(self, fail_first: int = 0, fail_status: int = 503, drop: bool = False,
                 hang: bool = False) -> None:
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.drop = drop
        self.hang = hang
        self.hits: list[Hit] = []
        self.lock = threading.Lock()
        self.release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                size = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(size)
                body = json.loads(raw or b"null")
                headers = {k.lower(): v for k, v in self.headers.items()}
                with receiver.lock:
                    attempt = len(receiver.hits)
                    failing = attempt < receiver.fail_first
                    status = (None if receiver.drop else receiver.fail_status) if failing else 200
                    receiver.hits.append(Hit(self.path, headers, body, raw, status))
                if receiver.hang:
                    receiver.release.wait()
                    self.close_connection = True
                    return
                if status is None:
                    self.close_connection = True  # drop the connection without an answer
                    return
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def delivered(self) -> list[dict[str, Any]]:
        """Bodies of the attempts we answered with 200, in arrival order."""
        with self.lock:
            return [h.body for h in self.hits if h.answered == 200]

    def wait_for_terminal(self, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Wait until a delivered body is terminal; return all delivered bodies (after a
        short settle, so that anything wrongly sent after the final state shows up)."""
        return self.wait_until(lambda bodies: any(
            b["status"] in ("succeeded", "failed", "canceled") for b in bodies), timeout,
            settle=SETTLE)

    def wait_until(self, check: Any, timeout: float = 30.0, settle: float = 0.0
                   ) -> list[dict[str, Any]]:
        """Poll until `check(bodies)`; `settle`: then wait that long before returning, for
        tests that go on to assert that nothing more was sent (a wait on a condition
        needs none)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            bodies = self.delivered()
            if check(bodies):
                if settle:
                    time.sleep(settle)
                    return self.delivered()
                return bodies
            time.sleep(0.02)
        raise AssertionError(f"receiver never saw what was expected; got {self.hits}")

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
