"""A model that prints without end: what its prediction keeps of its logs is bounded
(COGSERVE_LOGS_LIMIT, default 1 MiB of characters): the first and the last half, with a
marker saying how much was dropped, alike in the sync answer, the stored prediction, the
webhook and SSE's `completed` event, while every line still goes out as a `log` event.

Before the limit, a run() printing 50 MiB made a 52 MB sync answer and took the parent
from 38 MB to 145 MB resident (302 MB at its peak).
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

from harness import Server, write_model
from test_sse import SSE, parse

MIB = 1024 * 1024
CHATTY = '''
from collections.abc import Iterator

from cog import BaseRunner, streaming


class Runner(BaseRunner):
    @streaming
    def run(self, lines: int = 1, width: int = 100) -> Iterator[str]:
        filler = "x" * (width - 10)
        for k in range(lines):
            print(f"{k:09d}{filler}")  # `width` characters with the newline
        yield "done"
'''
MARKER = re.compile(r"\n\[cogserve: (\d+) characters of logs dropped here; "
                    r"COGSERVE_LOGS_LIMIT=(\d+) keeps the first and the last (\d+)\]\n")


def _line(k: int, width: int) -> str:
    return f"{k:09d}" + "x" * (width - 10) + "\n"


def _check_capped(logs: str, lines: int, width: int, limit: int) -> None:
    """The first and the last `limit // 2` characters, and the marker between them."""
    full = lines * width
    head, dropped, named, half, tail = MARKER.split(logs)
    assert (int(dropped), int(named), int(half)) == (full - limit, limit, limit // 2)
    assert len(head) == limit // 2 and len(tail) == limit - limit // 2
    assert head.startswith(_line(0, width))
    assert tail.endswith(_line(lines - 1, width))


def _rss_kib(pid: int) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_50_mib_flood_gives_a_1_mib_answer_and_the_parent_stays_small(serve, tmp_path):
    server: Server = serve(write_model(tmp_path, CHATTY))
    assert server.predict(lines=10).json()["logs"] == "".join(_line(k, 100) for k in range(10))
    before = _rss_kib(server.pid)
    lines, width = 50 * MIB // 4096, 4096
    r = server.client.post("/predictions", json={"input": {"lines": lines, "width": width}},
                           timeout=300)
    grown = _rss_kib(server.pid) - before
    assert r.status_code == 200 and r.json()["status"] == "succeeded", r.text[:500]
    assert len(r.content) < MIB + 64 * 1024, len(r.content)
    logs = r.json()["logs"]
    _check_capped(logs, lines, width, MIB)
    assert grown < 24 * 1024, f"the parent grew by {grown} KiB"  # before the limit: 107 MiB
    stored = server.client.get(f"/predictions/{r.json()['id']}").json()
    assert stored["logs"] == logs


def test_webhook_and_sse_carry_the_same_capped_logs_and_every_line_as_an_event(
        serve, receiver, tmp_path):
    limit = 4096
    server: Server = serve(write_model(tmp_path, CHATTY),
                           env={"COGSERVE_LOGS_LIMIT": str(limit)})
    lines, width = 300, 100
    hook = receiver()
    r = server.client.put("/predictions/chatty-1", headers={"Prefer": "respond-async"},
                          json={"input": {"lines": lines, "width": width},
                                "webhook": hook.url, "webhook_events_filter": ["completed"]})
    assert r.status_code == 202, r.text
    [completed] = hook.wait_for_terminal()
    _check_capped(completed["logs"], lines, width, limit)
    assert server.client.get("/predictions/chatty-1").json()["logs"] == completed["logs"]

    with server.client.stream("POST", "/predictions", headers=SSE,
                              json={"input": {"lines": lines, "width": width}}) as stream:
        events = parse("".join(stream.iter_text()))
    logs = [data["data"] for name, data in events if name == "log"]
    assert logs == [_line(k, width) for k in range(lines)]  # every line, as it came
    [final] = [data for name, data in events if name == "completed"]
    _check_capped(final["logs"], lines, width, limit)
    assert json.dumps(final["logs"]) == json.dumps(completed["logs"])


def test_a_bad_limit_stops_the_server_at_start_naming_the_variable(tmp_path):
    result = subprocess.run([sys.executable, "-m", "cogserve.cli", "serve",
                             str(write_model(tmp_path, CHATTY)), "--port", "0"],
                            env={**os.environ, "COGSERVE_LOGS_LIMIT": "lots"},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "COGSERVE_LOGS_LIMIT='lots' is not a number" in result.stderr
