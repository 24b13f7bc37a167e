"""The floor: a bare ASGI app on the HTTP server cogserve uses (uvicorn+httptools+uvloop).

It reads each request body in full and answers a constant JSON body; with
`Accept: text/event-stream` it streams FLOOR_TOKENS output events instead, and with
FLOOR_SLEEP_S set it awaits that long first (the async-slots scenario). No model, no
worker, no validation: whatever a scenario costs above this is the server's own work,
so RESULTS.md can show how close each system gets to what the HTTP layer alone allows.

Run as `python bench/floor.py --port N` in the cogserve bench venv.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

BODY = b'{"id":"floor","output":"ok","status":"succeeded"}'
JSON_HEADERS = [(b"content-type", b"application/json"),
                (b"content-length", str(len(BODY)).encode())]
SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
SLEEP_S = float(os.environ.get("FLOOR_SLEEP_S", "0") or 0)
TOKENS = int(os.environ.get("FLOOR_TOKENS", "10000"))


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    if scope["method"] == "POST":
        more = True
        while more:
            message = await receive()
            more = message.get("more_body", False)
    accept = dict(scope["headers"]).get(b"accept", b"")
    if scope["method"] == "POST" and b"text/event-stream" in accept:
        await _stream(send)
        return
    if SLEEP_S:
        await asyncio.sleep(SLEEP_S)
    await send({"type": "http.response.start", "status": 200, "headers": JSON_HEADERS})
    await send({"type": "http.response.body", "body": BODY})


async def _stream(send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
    await send({"type": "http.response.body", "more_body": True,
                "body": b'event: start\ndata: {"id":"floor","status":"processing"}\n\n'})
    for index in range(TOKENS):
        event = b'event: output\ndata: {"chunk":"tok","index":%d}\n\n' % index
        await send({"type": "http.response.body", "body": event, "more_body": True})
    await send({"type": "http.response.body",
                "body": b'event: completed\ndata: {"id":"floor","status":"succeeded"}\n\n'})


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=args.port, loop="uvloop", http="httptools",
                lifespan="off", access_log=False, log_level="warning", server_header=False)


if __name__ == "__main__":
    main()
