"""How to start each compared system on a model folder, and when it is ready.

cogserve (and its VARIANTS: the same server started another way), the baseline (cogserve at
another commit, with `bench/run --baseline REF`), the reference (Cog 0.23.1 +
coglet 0.23.1), MLServer 1.7.1, LitServe and the floor app
each get a free port on 127.0.0.1 and run from their own bench venv. `Server.ready_s` is
process start to READY, as a user waiting on the health check sees it.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import re
import subprocess
import time
from dataclasses import dataclass, field

from bench import envs
from bench.loadgen import LoadError, wait_http
from bench.procs import Proc, free_port

LOGS = envs.CACHE / "logs"
COGSERVE = "cogserve"
COGSERVE_METRICS_OFF = "cogserve-metrics-off"
COGSERVE_ONE_WORKER = "cogserve-one-worker"
COGSERVE_STORE_MEMORY = "cogserve-store-memory"
BASELINE = "baseline"  # cogserve at --baseline REF: started exactly as cogserve is
COGSERVE_UNBATCHED = "cogserve-unbatched"  # the batching scenario's model without @batch
REFERENCE = "reference"
MLSERVER = "mlserver"
LITSERVE = "litserve"
FLOOR = "floor"


@dataclass(frozen=True)
class Variant:
    """cogserve started another way, measured as a system of its own beside cogserve
    (interleaved), so the ratio between the two is what the difference costs or buys."""

    env: dict[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()


VARIANTS = {
    # scenario 1: what Prometheus metrics cost (issue 15: within 5%)
    COGSERVE_METRICS_OFF: Variant(env={"COGSERVE_METRICS": "0"}),
    # scenario 1: what the default prediction store costs (issue 27: within 3%)
    COGSERVE_STORE_MEMORY: Variant(args=("--store", "memory")),
    # scenario 9: what a second worker adds (issue 14: cogserve there runs --workers 2)
    COGSERVE_ONE_WORKER: Variant(args=("--workers", "1", "--queue-size", "64")),
    COGSERVE_UNBATCHED: Variant(args=("--queue-size", "64")),
}
ALL = (COGSERVE, *VARIANTS, REFERENCE, MLSERVER, LITSERVE, FLOOR)
OURS = (COGSERVE, BASELINE)  # the two builds of cogserve: same arguments, same checks

_baseline: envs.Baseline | None = None


def use_baseline(baseline: envs.Baseline) -> None:
    """Make BASELINE start from this install (set once, by `bench/run --baseline`)."""
    global _baseline
    _baseline = baseline


def baseline_label() -> str | None:
    return _baseline.label if _baseline is not None else None


class StartError(RuntimeError):
    pass


@dataclass
class Server:
    system: str
    url: str
    proc: Proc | None     # None: a stand-in for a scenario that starts its own per round
    ready_s: float

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()


def _health_ready(status: int, body: bytes) -> bool:
    if status != 200:
        return False
    try:
        return json.loads(body).get("status") == "READY"
    except ValueError:
        return False


def predictor_ref(model: pathlib.Path) -> str:
    """`predict:` (or `run:`) from cog.yaml, read without a YAML parser."""
    text = (model / "cog.yaml").read_text()
    found = re.search(r'^(?:predict|run):\s*["\']?([^"\'\s#]+)', text, re.M)
    if not found:
        raise StartError(f"{model}/cog.yaml names no predict: or run:")
    return found.group(1)


def write_reference_schema(model: pathlib.Path) -> None:
    """The reference validates (and serves SSE) only with .cog/openapi_schema.json."""
    binary = envs.venv(COGSERVE) / "bin" / "cogserve"
    out = model / ".cog" / "openapi_schema.json"
    done = subprocess.run([str(binary), "schema", str(model), "-o", str(out)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise StartError(f"cogserve schema failed: {done.stderr.strip()[-300:]}")


LAYOUT_PAD_STEPS = 512  # BENCH_LAYOUT_PAD: 0 to 8,176 characters, in malloc's 16-byte steps


def start(system: str, model: pathlib.Path | None, *, tag: str, env: dict[str, str] | None = None,
          args: list[str] | None = None, timeout: float = 60.0) -> Server:
    """Start `system` serving `model`; raise StartError (server stopped) if it never gets ready."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(env or {})
    # where a server's buffers fall in memory shifts with the size of its environment, and
    # a C decode ran 20% slower in one layout than another (bench/FINDINGS.md, fourteenth
    # session): a variable of random length makes the layout a fresh draw at each launch,
    # from the same spread for every system, instead of one fixed by its venv's path
    env.setdefault("BENCH_LAYOUT_PAD", "x" * (16 * random.randrange(LAYOUT_PAD_STEPS)))
    args = list(args or [])
    log = LOGS / f"{tag}-{system}.log"
    variant = VARIANTS.get(system)
    if system in OURS or variant is not None:
        assert model is not None
        env.setdefault("LOG_FORMAT", "console")
        # the default prediction store's files (one per model folder and port) go under
        # the bench's cache, not the user's ~/.local/state
        env.setdefault("COGSERVE_STATE_DIR", str(envs.CACHE / "state"))
        if variant is not None:
            env.update(variant.env)
            args += variant.args
        if system == BASELINE:
            if _baseline is None:
                raise StartError("no baseline installed (bench/run --baseline REF)")
            venv = _baseline.venv
        else:
            venv = envs.venv(COGSERVE)
        argv = [str(venv / "bin" / "cogserve"), "serve", str(model),
                "--host", "127.0.0.1", "--port", str(port), *args]
        # started in the model's folder: the worker is `python -m cogserve.worker`, which
        # imports from the folder it starts in first, so from the repository's root a
        # baseline's worker ran this checkout's code
        proc = Proc(argv, cwd=model, env=env, log=log)
        health, ready = url + "/health-check", _health_ready
    elif system == REFERENCE:
        assert model is not None
        # coglet spawns its worker as `python -c ...` found on PATH: put the venv first
        bindir = envs.venv(REFERENCE) / "bin"
        env.update({"COG_PREDICT_TYPE_STUB": predictor_ref(model), "PORT": str(port),
                    "PATH": f"{bindir}:{os.environ.get('PATH', '')}"})
        argv = [str(envs.venv(REFERENCE) / "bin" / "python"), "-m", "cog.server.http",
                "--host", "127.0.0.1", *args]
        proc = Proc(argv, cwd=model, env=env, log=log)
        health, ready = url + "/health-check", _health_ready
    elif system == MLSERVER:
        assert model is not None
        env.update({"MLSERVER_HOST": "127.0.0.1", "MLSERVER_HTTP_PORT": str(port),
                    "MLSERVER_GRPC_PORT": str(free_port()),
                    "MLSERVER_METRICS_PORT": str(free_port())})
        argv = [str(envs.venv(MLSERVER) / "bin" / "mlserver"), "start", str(model)]
        proc = Proc(argv, cwd=model, env=env, log=log)
        health, ready = url + "/v2/health/ready", (lambda status, _body: status == 200)
    elif system == LITSERVE:
        assert model is not None
        argv = [str(envs.venv(LITSERVE) / "bin" / "python"), str(model / "litserve_app.py"),
                "--port", str(port)]
        proc = Proc(argv, cwd=model, env=env, log=log)
        health, ready = url + "/health", (lambda status, _body: status == 200)
    elif system == FLOOR:
        argv = [str(envs.venv(COGSERVE) / "bin" / "python"),
                str(envs.BENCH / "floor.py"), "--port", str(port)]
        proc = Proc(argv, env=env, log=log)
        health, ready = url + "/", (lambda status, _body: status == 200)
    else:
        raise StartError(f"unknown system {system!r}")
    try:
        wait_http(health, ready=ready, timeout=timeout, alive=proc.alive)
    except LoadError as exc:
        tail = proc.tail(5)
        proc.stop()
        raise StartError(f"{exc}; log: {tail}") from None
    return Server(system, url, proc, time.perf_counter() - proc.started)
