"""Server-sent event streams over real HTTP: the event stream is read off the wire and parsed.

Models: `stream` (sync @streaming tokens with logs, metrics, failure and a gate file
that holds token 1 back until the test has seen token 0), `stream_async` (async
ConcatenateIterator), `stream_files` (file chunks, plus a train()), `iter_plain`
(an Iterator without @streaming).
"""

from __future__ import annotations

import json
import socket
from typing import Any

import httpx

SSE = {"Accept": "text/event-stream"}
NOT_STREAMING = {"error": "This model does not support streaming responses. Add "
                          "@cog.streaming to predict() to enable SSE."}
TRUNCATED = "SSE stream replay truncated; events were dropped"
LAGGED = "SSE stream lagged; events were dropped"


def parse(text: str) -> list[tuple[str, Any]]:
    """`event: NAME\\ndata: JSON\\n\\n` blocks -> [(name, data)]."""
    events = []
    for block in text.split("\n\n"):
        if not block:
            continue
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        assert set(fields) == {"event", "data"}, block
        events.append((fields["event"], json.loads(fields["data"])))
    return events


class Reader:
    """Reads an SSE response event by event (httpx, streaming)."""

    def __init__(self, client: httpx.Client, method: str, path: str, body: dict[str, Any],
                 headers: dict[str, str] | None = None, own_client: bool = False) -> None:
        # own_client: a second connection made for this reader, closed with it
        self._client = client if own_client else None
        self._cm = client.stream(method, path, json=body, headers={**SSE, **(headers or {})})
        self.response = self._cm.__enter__()
        self._lines = self.response.iter_lines()
        self.events: list[tuple[str, Any]] = []

    def next(self) -> tuple[str, Any] | None:
        block: list[str] = []
        for line in self._lines:
            if line:
                block.append(line)
            elif block:
                event = parse("\n".join(block) + "\n\n")[0]
                self.events.append(event)
                return event
        assert not block, f"stream ended mid-event: {block}"
        return None

    def until(self, name: str, index: int | None = None) -> tuple[str, Any]:
        while True:
            event = self.next()
            assert event is not None, f"stream ended before {name} {index}: {self.events}"
            if event[0] == name and (index is None or event[1].get("index") == index):
                return event

    def rest(self) -> list[tuple[str, Any]]:
        while self.next() is not None:
            pass
        return self.events

    def close(self) -> None:
        self._cm.__exit__(None, None, None)
        if self._client is not None:
            self._client.close()


def read_all(server: Any, body: dict[str, Any], method: str = "POST", path: str = "/predictions",
             headers: dict[str, str] | None = None
             ) -> tuple[httpx.Response, list[tuple[str, Any]]]:
    reader = Reader(server.client, method, path, body, headers)
    try:
        return reader.response, reader.rest()
    finally:
        reader.close()


def names(events: list[tuple[str, Any]]) -> list[str]:
    return [name for name, _ in events]


def outputs(events: list[tuple[str, Any]]) -> list[Any]:
    chunks = [data for name, data in events if name == "output"]
    assert [c["index"] for c in chunks] == list(range(len(chunks)))
    return [c["chunk"] for c in chunks]


# ---------------------------------------------------------------- one stream


def test_event_order_logs_metrics_and_completed(serve):
    server = serve("stream")
    response, events = read_all(server, {"id": "s1", "input": {"n": 3, "metric": True}})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["transfer-encoding"] == "chunked"  # plain fetch() + reader works
    assert "content-length" not in response.headers
    assert events[0] == ("start", {"id": "s1", "status": "processing"})
    assert names(events[1:5]) == ["log", "log", "metric", "output"]
    assert events[1][1] == {"data": "log line 0\n", "source": "stdout"}
    assert events[2][1] == {"data": "to stderr\n", "source": "stderr"}
    # the model said mode="incr": the wire says "increment", as the reference's does
    assert events[3][1] == {"mode": "increment", "name": "tokens", "value": 1}
    assert outputs(events) == ["tok0", "tok1", "tok2"]
    assert names(events).count("metric") == 3
    name, final = events[-1]
    assert name == "completed" and names(events).count("completed") == 1
    assert final["id"] == "s1" and final["status"] == "succeeded"
    assert final["output"] == ["tok0", "tok1", "tok2"]
    assert final["logs"] == "log line 0\nto stderr\nlog line 1\nlog line 2\n"
    assert final["metrics"]["tokens"] == 3 and final["metrics"]["predict_time"] > 0
    assert server.health()["status"] == "READY"
    # the same model without Accept: a JSON response with the collected list
    body = server.predict(n=2).json()
    assert body["status"] == "succeeded" and body["output"] == ["tok0", "tok1"]


def test_chunks_leave_as_yielded_sync_and_async(serve, tmp_path):
    for model, first in (("stream", "tok0"), ("stream_async", "a0 ")):
        server = serve(model)
        gate = tmp_path / f"gate-{model}"
        reader = Reader(server.client, "POST", "/predictions",
                        {"input": {"n": 3, "gate": str(gate)}})
        try:
            # run() is blocked before its second token until we have seen the first
            assert reader.until("output", 0)[1] == {"chunk": first, "index": 0}
            gate.touch()
            events = reader.rest()
        finally:
            reader.close()
        chunks = outputs(events)
        assert "gate-timeout" not in chunks and len(chunks) == 3
        assert events[-1][1]["status"] == "succeeded"
        assert events[-1][1]["output"] == chunks


def test_failure_mid_stream(serve):
    server = serve("stream")
    # Prefer: respond-async with SSE: the stream wins, as in the reference
    response, events = read_all(server, {"input": {"n": 5, "fail_at": 2}},
                                headers={"Prefer": "respond-async"})
    assert response.status_code == 200
    assert outputs(events) == ["tok0", "tok1"]
    name, final = events[-1]
    assert name == "completed"
    assert final["status"] == "failed" and "stream broke" in final["error"]
    assert final["output"] is None  # streamed, but a failure reports none, as the reference
    assert server.health()["status"] == "READY"


def test_cancel_mid_stream(serve):
    server = serve("stream")
    reader = Reader(server.client, "POST", "/predictions",
                    {"id": "c1", "input": {"n": 200, "delay": 0.05}})
    try:
        reader.until("output", 0)
        assert server.client.post("/predictions/c1/cancel").status_code == 200
        events = reader.rest()
    finally:
        reader.close()
    name, final = events[-1]
    assert name == "completed" and final["status"] == "canceled"
    assert 1 <= len(outputs(events)) < 200
    assert final["output"] == outputs(events)
    assert server.health()["status"] == "READY"


def test_file_chunks_arrive_as_data_urls(serve):
    server = serve("stream_files")
    _, events = read_all(server, {"input": {"n": 2}})
    assert outputs(events) == ["data:text/plain;base64,ZmlsZSAw",
                               "data:text/plain;base64,ZmlsZSAx"]
    assert events[-1][1]["output"] == outputs(events)


# ---------------------------------------------------------------- refusals


def test_406_without_streaming_and_for_trainings(serve):
    plain = serve("iter_plain")
    for accept in ("text/event-stream", "application/json, text/event-stream"):
        r = plain.client.post("/predictions", json={"input": {}}, headers={"Accept": accept})
        assert r.status_code == 406 and r.json() == NOT_STREAMING
        r = plain.client.put("/predictions/x", json={"input": {}}, headers={"Accept": accept})
        assert r.status_code == 406 and r.json() == NOT_STREAMING
    body = plain.predict(n=3).json()  # iterator output still works as JSON
    assert body["output"] == ["p0", "p1", "p2"] and body["logs"] == "plain 0\nplain 1\nplain 2\n"

    files = serve("stream_files")
    for method, path in (("POST", "/trainings"), ("PUT", "/trainings/t1")):
        r = files.client.request(method, path, json={"input": {}}, headers=SSE)
        assert r.status_code == 406
        assert r.json() == {"error": "Training endpoints do not support streaming responses."}
    # invalid input is refused as JSON before any stream starts
    r = files.client.post("/predictions", json={"input": {"n": "x"}}, headers=SSE)
    assert r.status_code == 422 and r.headers["content-type"] == "application/json"


# ---------------------------------------------------------------- several readers, reconnects


def test_put_reconnect_replays_then_continues_live(serve, tmp_path):
    server = serve("stream")
    gate = tmp_path / "gate"
    body = {"input": {"n": 4, "gate": str(gate)}}
    first = Reader(server.client, "PUT", "/predictions/r1", body)
    try:
        first.until("output", 0)
    finally:
        first.close()  # a PUT stream's client going away does not cancel
    second = Reader(server.client, "PUT", "/predictions/r1", body)
    try:
        assert second.response.status_code == 200
        replayed = second.until("output", 0)
        assert second.events == first.events  # the whole history so far, in order
        assert replayed == ("output", {"chunk": "tok0", "index": 0})
        gate.touch()
        events = second.rest()
    finally:
        second.close()
    assert names(events).count("start") == 1
    assert outputs(events) == ["tok0", "tok1", "tok2", "tok3"]
    assert events[-1][1]["status"] == "succeeded" and events[-1][1]["id"] == "r1"


def test_two_concurrent_readers_get_every_event(serve, tmp_path):
    server = serve("stream")
    gate = tmp_path / "gate"
    body = {"input": {"n": 5, "gate": str(gate), "metric": True}}
    a = Reader(server.client, "PUT", "/predictions/two", body)
    b = Reader(httpx.Client(base_url=server.url, timeout=60), "PUT", "/predictions/two", body,
               own_client=True)
    try:
        a.until("output", 0)
        b.until("output", 0)
        gate.touch()
        events_a, events_b = a.rest(), b.rest()
    finally:
        a.close()
        b.close()
    assert events_a == events_b
    assert outputs(events_a) == [f"tok{k}" for k in range(5)]
    assert names(events_a).count("log") == 6 and names(events_a).count("metric") == 5


def test_truncated_replay_sends_the_error_event_and_closes(serve, tmp_path):
    server = serve("stream", env={"COG_STREAM_HISTORY_CAPACITY": "3"})
    gate = tmp_path / "gate"
    body = {"input": {"n": 3, "gate": str(gate)}}
    first = Reader(server.client, "PUT", "/predictions/t1", body)
    try:
        first.until("output", 0)  # start, 2 logs, output: 4 events, 3 kept
        r = server.client.put("/predictions/t1", json=body, headers=SSE)
        assert r.status_code == 200 and r.headers["content-type"] == "text/event-stream"
        assert r.text == ('event: error\ndata: {"error":"SSE stream replay truncated; '
                          'events were dropped","skipped":1}\n\n')
        gate.touch()
        events = first.rest()  # the live stream is unaffected
    finally:
        first.close()
    assert events[-1][1]["status"] == "succeeded"
    assert outputs(events) == ["tok0", "tok1", "tok2"]


def test_the_replay_is_bounded_by_bytes(serve, tmp_path):
    """Big chunks fall out of the replay by bytes, not only by count (defect 10 of #13)."""
    server = serve("stream", env={"COG_STREAM_HISTORY_BYTES": "4096"})
    gate = tmp_path / "gate"
    body = {"input": {"n": 3, "size": 5000, "gate": str(gate)}}
    first = Reader(server.client, "PUT", "/predictions/b1", body)
    try:
        first.until("output", 0)  # start, 2 logs, a 5 KB output: none of them kept
        r = server.client.put("/predictions/b1", json=body, headers=SSE)
        assert r.text == ('event: error\ndata: {"error":"SSE stream replay truncated; '
                          'events were dropped","skipped":4}\n\n')
        gate.touch()
        events = first.rest()  # live readers still get every chunk whole
    finally:
        first.close()
    assert outputs(events) == [f"tok{k}" + "x" * 5000 for k in range(3)]


def test_capacity_zero_keeps_live_events_without_replay(serve, tmp_path):
    server = serve("stream", env={"COG_STREAM_HISTORY_CAPACITY": "0"})
    gate = tmp_path / "gate"
    body = {"input": {"n": 3, "gate": str(gate)}}
    first = Reader(server.client, "PUT", "/predictions/z1", body)
    second = None
    try:
        assert first.next() == ("start", {"id": "z1", "status": "processing"})
        first.until("output", 0)
        second = Reader(httpx.Client(base_url=server.url, timeout=60), "PUT",
                        "/predictions/z1", body, own_client=True)
        assert second.response.status_code == 200
        gate.touch()
        live = second.rest()
        events = first.rest()
    finally:
        first.close()
        if second is not None:
            second.close()
    assert outputs(events) == ["tok0", "tok1", "tok2"]
    # no replay, no error: the reconnect sees what happened after it attached
    assert "start" not in names(live) and "error" not in names(live)
    assert [d["index"] for n, d in live if n == "output"] == [1, 2]
    assert live[-1] == events[-1] and live[-1][1]["status"] == "succeeded"


def test_post_stream_disconnect_cancels_like_a_sync_post(serve):
    server = serve("stream")
    creator = Reader(server.client, "POST", "/predictions",
                     {"id": "d1", "input": {"n": 200, "delay": 0.05}})
    watcher = None
    try:
        creator.until("output", 0)
        watcher = Reader(httpx.Client(base_url=server.url, timeout=60), "PUT",
                         "/predictions/d1", {"input": {}}, own_client=True)
        watcher.until("output", 0)
        creator.close()
        events = watcher.rest()
    finally:
        creator.close()
        if watcher is not None:
            watcher.close()
    assert events[-1][0] == "completed" and events[-1][1]["status"] == "canceled"
    assert len(outputs(events)) < 200


# ---------------------------------------------------------------- a reader that stops reading


def _raw_put(port: int, path: str, body: dict[str, Any]) -> socket.socket:
    """A client with a tiny receive window that we can stop reading from."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    payload = json.dumps(body).encode()
    sock.sendall(b"PUT " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
                 b"Content-Type: application/json\r\nContent-Length: "
                 + str(len(payload)).encode() + b"\r\n\r\n" + payload)
    return sock


def _read_until(sock: socket.socket, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        chunk = sock.recv(4096)
        assert chunk, data
        data += chunk
    return data


def _dechunk(raw: bytes) -> str:
    head, _, body = raw.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head
    out = b""
    while True:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return out.decode()
        out += body[:size]
        body = body[size + 2:]


def test_stalled_reader_is_cut_off_and_slows_nobody(serve, tmp_path):
    # 24 MB, several times what the stalled socket's kernel buffers plus its 4 MiB queue
    # hold; paced (2 ms a chunk) so that the reading client is never the slow one
    n, size = 1500, 16000
    server = serve("stream")
    gate = tmp_path / "gate"
    body = {"input": {"n": n, "size": size, "delay": 0.002, "gate": str(gate), "quiet": True}}
    fast = Reader(server.client, "PUT", "/predictions/slow1", body)
    stalled = _raw_put(server.port, "/predictions/slow1", body)
    try:
        fast.until("output", 0)
        seen = _read_until(stalled, b'"index":0}')  # attached; now it stops reading
        gate.touch()
        events = fast.rest()
        assert events[-1][1]["status"] == "succeeded"
        assert len(outputs(events)) == n
        assert server.health()["status"] == "READY"  # the model finished too
        # now drain what the stalled client was sent: a gap, then the lagged error
        stalled.settimeout(30)
        rest = b""
        while chunk := stalled.recv(1 << 16):
            rest += chunk
        late = parse(_dechunk(seen + rest))
    finally:
        fast.close()
        stalled.close()
    assert names(late)[0] == "start"
    assert late[-1][0] == "error"
    assert late[-1][1]["error"] == LAGGED and late[-1][1]["skipped"] > 0
    assert "completed" not in names(late)
    received = [d["index"] for name, d in late if name == "output"]
    assert received == list(range(len(received))) and len(received) < n
    # every event it did not get is counted: the outputs and `completed`
    assert late[-1][1]["skipped"] == n + 1 - len(received)

