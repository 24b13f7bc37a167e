"""Real local servers for file tests: a file server (http and https) and an upload receiver.

The file server serves what a test puts in `files` (with an optional Content-Disposition
name), answers 404 for the rest and stalls on `/slow/...`. The receiver takes Cog's
`PUT` multipart uploads, records name, type, size and digest, and answers with a
Location header (or none, or a failure) as the test asks; `GET /count` tells a model how
many uploads have arrived; `POST /hook` records webhooks.
"""

from __future__ import annotations

import hashlib
import json
import ssl
import subprocess
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class _Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None
              ) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _start(handler: type[BaseHTTPRequestHandler], context: ssl.SSLContext | None = None
           ) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    scheme = "http"
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"{scheme}://127.0.0.1:{server.server_address[1]}"


def self_signed_cert(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 made with the openssl CLI (valid one day)."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    return cert, key


class FileServer:
    """Serves `files[path] = (bytes, content_type, disposition_name | None)`."""

    def __init__(self, cert: tuple[Path, Path] | None = None) -> None:
        self.files: dict[str, tuple[bytes, str, str | None]] = {}
        self.stall = threading.Event()  # set at close: stalled requests end
        hub = self

        class Handler(_Quiet):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path.startswith("/slow/"):
                    hub.stall.wait(30)
                    self.close_connection = True
                    return
                entry = hub.files.get(self.path)
                if entry is None:
                    self.reply(404, b"not here")
                    return
                data, ctype, disposition = entry
                headers = {"content-type": ctype}
                if disposition:
                    headers["content-disposition"] = f'attachment; filename="{disposition}"'
                self.reply(200, data, headers)

        context = None
        if cert is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(cert[0]), str(cert[1]))
        self.server, self.url = _start(Handler, context)

    def close(self) -> None:
        self.stall.set()
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Upload:
    path: str
    name: str
    content_type: str
    size: int
    sha256: str
    head: bytes


class Receiver:
    """Takes PUT multipart uploads; `location` = "absolute" | "relative" | None; `fail`.

    With `serve_back`, it keeps each upload's bytes and serves them at its Location (a
    browser test shows an uploaded image from there).
    """

    def __init__(self, serve_back: bool = False) -> None:
        self.uploads: list[Upload] = []
        self.stored: dict[str, tuple[str, bytes]] | None = {} if serve_back else None
        self.hooks: list[dict[str, Any]] = []
        self.location: str | None = "absolute"
        self.fail_status: int | None = None
        self.lock = threading.Lock()
        hub = self

        class Handler(_Quiet):
            def do_PUT(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if hub.fail_status is not None:
                    self.reply(hub.fail_status, b"no")
                    return
                upload, data = _parse_multipart(self.path, self.headers.get("content-type", ""),
                                                body)
                with hub.lock:
                    hub.uploads.append(upload)
                    if hub.stored is not None:
                        hub.stored[upload.name] = (upload.content_type, data)
                headers = {}
                if hub.location == "absolute":
                    headers["location"] = f"{hub.url}/stored/{upload.name}"
                elif hub.location == "relative":
                    headers["location"] = f"/stored/rel-{upload.name}"
                self.reply(201, b"", headers)

            def do_GET(self) -> None:  # noqa: N802
                if hub.stored is not None and self.path.startswith("/stored/"):
                    with hub.lock:
                        found = hub.stored.get(self.path[len("/stored/"):])
                    if found is None:
                        self.reply(404)
                    else:
                        self.reply(200, found[1], {"content-type": found[0]})
                    return
                with hub.lock:
                    count = len(hub.uploads)
                self.reply(200, json.dumps({"count": count}).encode(),
                           {"content-type": "application/json"})

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with hub.lock:
                    hub.hooks.append(json.loads(body))
                self.reply(200)

        self.server, self.url = _start(Handler)

    def wait_for_hook(self, check: Any, timeout: float = 30.0) -> dict[str, Any]:
        """The first webhook body for which `check(body)` is true (waits up to `timeout`)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                for hook in self.hooks:
                    if check(hook):
                        return hook
            time.sleep(0.05)
        raise AssertionError(f"no matching webhook; got {self.hooks}")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _parse_multipart(path: str, content_type: str, body: bytes) -> tuple[Upload, bytes]:
    assert content_type.startswith("multipart/form-data"), content_type
    boundary = content_type.split("boundary=", 1)[1].strip('"').encode()
    parts = body.split(b"--" + boundary)
    files = [p for p in parts if b'name="file"' in p[:500]]
    assert len(files) == 1, f"expected one file part, got {len(files)}"
    head, _, data = files[0].partition(b"\r\n\r\n")
    data = data[:-2] if data.endswith(b"\r\n") else data
    headers = {}
    for line in head.decode().strip().split("\r\n"):
        key, _, value = line.partition(":")
        headers[key.strip().lower()] = value.strip()
    disposition = headers.get("content-disposition", "")
    name = disposition.split('filename="', 1)[1].split('"', 1)[0] if "filename=" in disposition \
        else ""
    return Upload(path, name, headers.get("content-type", ""), len(data),
                  hashlib.sha256(data).hexdigest(), data[:64]), data
