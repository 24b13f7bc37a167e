"""Instructions the server process executes per no-op prediction, counted by callgrind.

On a shared machine req/s and even CPU time per request move with everyone else's load
(other processes take the cores, the caches and the CPU's clock). The number of
instructions a request makes the server execute does not: it is the same on a quiet
and on a loaded machine, to a fraction of a percent, so a hot-path change of a few
percent can be measured before and after at any time.

    python -m bench.instructions                       # the working tree
    python -m bench.instructions --baseline HEAD       # ... and cogserve at HEAD
    python -m bench.instructions --baseline 48f67ce --env COGSERVE_METRICS=0
    python -m bench.instructions --mode refusal --mode mix --baseline 48f67ce

Each system serves a model under `valgrind --tool=callgrind` (the server process and its
threads; not the worker, which is not traced); after `--warmup` requests the counters
are zeroed, `--requests` more are sent, and the counters dumped: their total over the
requests is the figure. What it leaves out: system calls (the kernel's instructions are
not counted) and the worker. Startup under valgrind takes a minute or two; the systems
run side by side. The modes (`--mode`, repeatable; each its own server):

- `sequential` (the default): bench/models/noop, one client, one request at a time
  (scenario 1): instructions per no-op prediction.
- `refusal`: bench/models/hold, whose one slot a prediction holds (it sleeps) while
  one client sends the no-op body, each answered 409 (scenario 2's usual answer):
  instructions per refusal.
- `mix`: bench/models/noop, `CLIENTS` clients at once on its one slot (scenario 2: most
  are refused while the slot is busy) until `--requests` have succeeded: instructions
  per *successful* prediction, the figure scenario 2 divides CPU by, with the refusals
  seen per success beside it. The mix depends on how fast the (traced, slowed) parent
  runs against the (untraced) worker and the clients, so compare builds by it only
  next to its refusals per success; `refusal` and `sequential` are the exact ones.
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

MODELS = {"sequential": "noop", "refusal": "hold", "mix": "noop"}
MODES = tuple(MODELS)
BODY = b'{"input":{"text":"hi"}}'
HOLD = b'{"input":{"seconds":3600}}'  # refusal: the prediction that keeps the slot
CLIENTS = 8  # mix: concurrent clients, as in scenario 2
_TOTAL = re.compile(rb"^(?:summary|totals): (\d+)", re.M)
IDLE_S = 5.0  # seconds of idle counted, for the idle rate
# the default prediction store writes finished sync predictions within a second
# (runtime/store/durable.py SYNC_FLUSH): the idle rate is taken once the warm-up's are written,
# and the measured count includes the writing of its own last ones
SETTLE_S = 2.5


@dataclass
class Count:
    system: str
    mode: str
    per_request: float | None = None
    loop: float = 0.0  # the main thread's part (the event loop)
    error: str = ""
    refused: float = 0.0  # mix: 409 answers per successful prediction


def count(system: str, venv: pathlib.Path, mode: str, *, warmup: int, requests: int,
          env: dict[str, str], keep: pathlib.Path | None = None) -> Count:
    out = pathlib.Path(tempfile.mkdtemp(prefix="bench-callgrind-"))
    port = free_port()
    model = envs.BENCH / "models" / MODELS[mode]
    argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/callgrind.%p",
            "--dump-instr=no", "--separate-threads=yes", str(venv / "bin" / "python"),
            str(venv / "bin" / "cogserve"),
            "serve", str(model), "--host", "127.0.0.1", "--port", str(port)]
    # PYTHONMALLOC=malloc: valgrind sees the allocations (pymalloc's arenas confuse it)
    # in the model's folder: from the repository's root a baseline's worker (`python -m
    # cogserve.worker`) would import this checkout's cogserve
    proc = Proc(argv, cwd=model, env={"LOG_FORMAT": "console", "PYTHONMALLOC": "malloc", **env},
                log=out / "server.log")
    try:
        wait_http(f"http://127.0.0.1:{port}/health-check", alive=proc.alive, timeout=600,
                  poll=0.5, ready=lambda status, body: status == 200 and b'"READY"' in body)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        _send(conn, warmup)
        time.sleep(SETTLE_S)
        if mode == "refusal":  # the slot is held from now on
            threading.Thread(target=_hold, args=(port,), daemon=True).start()
            _wait_refused(conn)
        # the server also works while idle (uvicorn's 0.1 s tick, the Date header): that
        # rate, taken first, is taken out of the measured span, which lasts as long as
        # the machine's load makes it
        _callgrind_control("--zero", proc.pid)
        began = time.monotonic()
        time.sleep(IDLE_S)
        _callgrind_control("--dump=idle", proc.pid)
        idle = _dumped(out, b"idle")
        idle_s = time.monotonic() - began
        conn.close()  # the server closed it meanwhile (keep-alive timeout): a new one
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        expect = 409 if mode == "refusal" else 200
        _send(conn, 1, expect)
        refused = 0
        _callgrind_control("--zero", proc.pid)
        began = time.monotonic()
        if mode == "mix":
            refused = _mix(port, requests)
        else:
            _send(conn, requests, expect)
        time.sleep(SETTLE_S)
        _callgrind_control("--dump=measured", proc.pid)
        span = time.monotonic() - began
        conn.close()
        measured = _dumped(out, b"measured")
        total, loop = (
            (sum(measured.values()) - sum(idle.values()) * span / idle_s) / requests,
            (measured.get(1, 0) - idle.get(1, 0) * span / idle_s) / requests)
        return Count(system, mode, total, loop, refused=refused / requests)
    except (LoadError, OSError, RuntimeError, subprocess.CalledProcessError) as exc:
        return Count(system, mode, error=f"{exc}; log: {proc.tail(3)}")
    finally:
        proc.stop()
        if keep is not None:  # the measured dump, for callgrind_annotate --inclusive=yes
            keep.mkdir(parents=True, exist_ok=True)
            label = re.sub(r"[^A-Za-z0-9]+", "-", system).strip("-")
            for path in out.glob("callgrind.*"):
                if b"\ndesc: Trigger: dump measured\n" in path.read_bytes():
                    thread = path.name.rpartition("-")[2]
                    shutil.copy(path, keep / f"{mode}-{label}-thread{thread}.callgrind")
        shutil.rmtree(out, ignore_errors=True)


def _dumped(folder: pathlib.Path, name: bytes) -> dict[int, int]:
    """The instruction totals of the dump called `name`, by thread (1: the main thread;
    callgrind names each thread's file `callgrind.PID.DUMP-THREAD`). The files can land
    a moment after callgrind_control returns (on a busy machine): looked for a while."""
    deadline = time.monotonic() + 180
    while not _dumped_now(folder, name):
        if time.monotonic() > deadline:
            raise RuntimeError(f"callgrind wrote no {name.decode()!r} dump")
        time.sleep(0.2)
    time.sleep(0.5)  # the other threads' files of the same dump
    return _dumped_now(folder, name)


def _dumped_now(folder: pathlib.Path, name: bytes) -> dict[int, int]:
    totals: dict[int, int] = {}
    for path in folder.glob("callgrind.*"):
        text = path.read_bytes()
        if b"\ndesc: Trigger: dump " + name + b"\n" in text:
            found = _TOTAL.search(text)
            if found:
                thread = path.name.rpartition("-")[2]
                totals[int(thread) if thread.isdigit() else 1] = int(found.group(1))
    return totals


def _send(conn: http.client.HTTPConnection, n: int, expect: int = 200) -> None:
    for _ in range(n):
        status = _post(conn, BODY)
        if status != expect:
            raise RuntimeError(f"HTTP {status}, not {expect}")


def _post(conn: http.client.HTTPConnection, body: bytes) -> int:
    conn.request("POST", "/predictions", body, {"Content-Type": "application/json"})
    response = conn.getresponse()
    response.read()
    return response.status


def _hold(port: int) -> None:
    """Keep the only slot busy until the server is stopped (again while it is refused:
    a probe of `_wait_refused` may have had the slot)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=7200)
    try:
        while _post(conn, HOLD) == 409:
            time.sleep(0.01)
    except OSError:
        pass  # the server was stopped under it


def _wait_refused(conn: http.client.HTTPConnection) -> None:
    """Until the held prediction has the slot (the first 409)."""
    deadline = time.monotonic() + 600
    while _post(conn, BODY) != 409:
        if time.monotonic() > deadline:
            raise RuntimeError("the slot was never held")
        time.sleep(0.05)


def _mix(port: int, successes: int) -> int:
    """CLIENTS clients post until `successes` predictions succeeded; the 409s seen."""
    lock = threading.Lock()
    tally = {"ok": 0, "refused": 0}
    failures: list[str] = []

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        while True:
            with lock:
                if tally["ok"] >= successes or failures:
                    break
            status = _post(conn, BODY)
            with lock:
                if status == 200:
                    tally["ok"] += 1
                elif status == 409:
                    tally["refused"] += 1
                else:
                    failures.append(f"HTTP {status}")
        conn.close()

    clients = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join()
    if failures:
        raise RuntimeError(failures[0])
    # a client's last request may succeed past the count: the figure divides by `successes`
    return tally["refused"]


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
    parser.add_argument("--mode", action="append", choices=MODES, default=[],
                        help="what to count (repeatable; default sequential): see above")
    parser.add_argument("--keep", type=pathlib.Path, metavar="DIR",
                        help="keep each measured callgrind dump in DIR (MODE-SYSTEM.callgrind; "
                             "read with callgrind_annotate --inclusive=yes)")
    args = parser.parse_args(argv)
    modes = args.mode or ["sequential"]
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("bench.instructions needs valgrind (apt-get install valgrind)")
    env = dict(item.split("=", 1) for item in args.env)
    systems = [("cogserve (working tree)", envs.venv("cogserve"))]
    for ref in args.baseline:
        baseline = envs.baseline(ref)
        systems.append((baseline.label, baseline.venv))
    for mode in modes:
        _report(mode, systems, args.requests, args.warmup, env, args.env, args.keep)


TITLES = {"sequential": "instructions per no-op prediction",
          "refusal": "instructions per 409 refusal (the slot held)",
          "mix": f"instructions per successful prediction, {CLIENTS} clients on one slot"}


def _report(mode: str, systems: list[tuple[str, pathlib.Path]], requests: int, warmup: int,
            env: dict[str, str], env_args: list[str], keep: pathlib.Path | None) -> None:
    """Count `mode` on every system at once (side by side) and print the figures."""
    results: list[Count] = []
    threads = [threading.Thread(target=lambda s=s, v=v: results.append(
        count(s, v, mode, warmup=warmup, requests=requests, env=env, keep=keep)))
        for s, v in systems]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    order = [name for name, _ in systems]
    results.sort(key=lambda c: order.index(c.system))
    ours = results[0].per_request
    print(f"{TITLES[mode]}, server process (callgrind; {requests} "
          f"{'successes' if mode == 'mix' else 'requests'} after {warmup}; "
          f"{time.monotonic() - started:.0f} s"
          + (f"; env {' '.join(env_args)}" if env_args else "") + ")", flush=True)
    for result in results:
        if result.per_request is None:
            print(f"  {result.system}: failed: {result.error}")
            continue
        ratio = f"  cogserve / this {ours / result.per_request:.3f}x" \
            if ours and result is not results[0] else ""
        mix = f"  ({result.refused:.2f} refusals per success)" if mode == "mix" else ""
        print(f"  {result.system}: {result.per_request:,.0f} (event loop {result.loop:,.0f})"
              f"{ratio}{mix}", flush=True)


if __name__ == "__main__":
    try:
        main()
    except envs.SetupError as exc:
        print(f"bench: setup failed: {exc}", file=sys.stderr)
        sys.exit(2)
