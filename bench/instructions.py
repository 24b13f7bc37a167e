"""Instructions the server process executes per no-op prediction, counted by callgrind.

On a shared machine req/s and even CPU time per request move with everyone else's load
(other processes take the cores, the caches and the CPU's clock). The number of
instructions a request makes the server execute does not: it is the same on a quiet
and on a loaded machine, to a fraction of a percent, so a hot-path change of a few
percent can be measured before and after at any time.

    python -m bench.instructions                       # the working tree
    python -m bench.instructions --baseline HEAD       # ... and cogserve at HEAD
    python -m bench.instructions --baseline 48f67ce --env COGSERVE_METRICS=0

Each system serves bench/models/noop under `valgrind --tool=callgrind` (the server
process and its threads; not the worker, which is not traced); after `--warmup`
sequential requests the counters are zeroed, `--requests` more are sent, and the
counters dumped: their total over the requests is the figure. What it leaves out:
system calls (the kernel's instructions are not counted) and the worker. Startup under
valgrind takes a minute or two; the systems run side by side.
"""

from __future__ import annotations

import argparse
import http.client
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from bench import envs
from bench.loadgen import LoadError, wait_http
from bench.procs import Proc, free_port

MODEL = envs.BENCH / "models" / "noop"
BODY = b'{"input":{"text":"hi"}}'
_TOTAL = re.compile(rb"^(?:summary|totals): (\d+)", re.M)
IDLE_S = 5.0  # seconds of idle counted, for the idle rate
# the default prediction store writes finished sync predictions within a second
# (runtime/durable.py SYNC_FLUSH): the idle rate is taken once the warm-up's are written,
# and the measured count includes the writing of its own last ones
SETTLE_S = 2.5


@dataclass
class Count:
    system: str
    per_request: float | None = None
    error: str = ""


def count(system: str, venv: pathlib.Path, *, warmup: int, requests: int,
          env: dict[str, str]) -> Count:
    out = pathlib.Path(tempfile.mkdtemp(prefix="bench-callgrind-"))
    port = free_port()
    argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/callgrind.%p",
            "--dump-instr=no", str(venv / "bin" / "python"), str(venv / "bin" / "cogserve"),
            "serve", str(MODEL), "--host", "127.0.0.1", "--port", str(port)]
    # PYTHONMALLOC=malloc: valgrind sees the allocations (pymalloc's arenas confuse it)
    proc = Proc(argv, env={"LOG_FORMAT": "console", "PYTHONMALLOC": "malloc", **env},
                log=out / "server.log")
    try:
        wait_http(f"http://127.0.0.1:{port}/health-check", alive=proc.alive, timeout=600,
                  poll=0.5, ready=lambda status, body: status == 200 and b'"READY"' in body)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        _send(conn, warmup)
        time.sleep(SETTLE_S)
        # the server also works while idle (uvicorn's 0.1 s tick, the Date header): that
        # rate, taken first, is taken out of the measured span, which lasts as long as
        # the machine's load makes it
        _callgrind_control("--zero", proc.pid)
        began = time.monotonic()
        time.sleep(IDLE_S)
        _callgrind_control("--dump=idle", proc.pid)
        idle_per_s = _dumped(out, b"idle") / (time.monotonic() - began)
        conn.close()  # the server closed it meanwhile (keep-alive timeout): a new one
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        _send(conn, 1)
        _callgrind_control("--zero", proc.pid)
        began = time.monotonic()
        _send(conn, requests)
        time.sleep(SETTLE_S)
        _callgrind_control("--dump=measured", proc.pid)
        span = time.monotonic() - began
        conn.close()
        measured = _dumped(out, b"measured")
        return Count(system, (measured - idle_per_s * span) / requests)
    except (LoadError, OSError, RuntimeError, subprocess.CalledProcessError) as exc:
        return Count(system, error=f"{exc}; log: {proc.tail(3)}")
    finally:
        proc.stop()
        shutil.rmtree(out, ignore_errors=True)


def _dumped(folder: pathlib.Path, name: bytes) -> int:
    """The instruction total of the dump called `name`."""
    for path in folder.glob("callgrind.*"):
        text = path.read_bytes()
        if b"\ndesc: Trigger: dump " + name + b"\n" in text:
            found = _TOTAL.search(text)
            if found:
                return int(found.group(1))
    raise RuntimeError(f"callgrind wrote no {name.decode()!r} dump")


def _send(conn: http.client.HTTPConnection, n: int) -> None:
    for _ in range(n):
        conn.request("POST", "/predictions", BODY, {"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}")


def _callgrind_control(option: str, pid: int) -> None:
    subprocess.run(["callgrind_control", option, str(pid)], check=True, capture_output=True,
                   timeout=120)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", action="append", default=[], metavar="REF",
                        help="also count cogserve at this git ref (repeatable)")
    parser.add_argument("--requests", type=int, default=200, help="requests counted")
    parser.add_argument("--warmup", type=int, default=100, help="requests sent first")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="environment for every server (e.g. COGSERVE_METRICS=0)")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("bench.instructions needs valgrind (apt-get install valgrind)")
    env = dict(item.split("=", 1) for item in args.env)
    systems = [("cogserve (working tree)", envs.venv("cogserve"))]
    for ref in args.baseline:
        baseline = envs.baseline(ref)
        systems.append((baseline.label, baseline.venv))
    results: list[Count] = []
    threads = [threading.Thread(target=lambda s=s, v=v: results.append(
        count(s, v, warmup=args.warmup, requests=args.requests, env=env)))
        for s, v in systems]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    order = [name for name, _ in systems]
    results.sort(key=lambda c: order.index(c.system))
    ours = results[0].per_request
    print(f"instructions per no-op prediction, server process (callgrind; {args.requests} "
          f"requests after {args.warmup}; {time.monotonic() - started:.0f} s"
          + (f"; env {' '.join(args.env)}" if args.env else "") + ")")
    for result in results:
        if result.per_request is None:
            print(f"  {result.system}: failed: {result.error}")
            continue
        ratio = f"  cogserve / this {ours / result.per_request:.3f}x" \
            if ours and result is not results[0] else ""
        print(f"  {result.system}: {result.per_request:,.0f}{ratio}")


if __name__ == "__main__":
    try:
        main()
    except envs.SetupError as exc:
        print(f"bench: setup failed: {exc}", file=sys.stderr)
        sys.exit(2)
