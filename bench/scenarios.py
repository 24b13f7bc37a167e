"""The scenarios: each a small model under bench/models/ and one round of measurement.

A scenario lists the systems that can run it, its figures (name, unit, which way is
better), how to start a system for it, and `measure()` - one round for one running
server, returning a value per figure. The runner in main.py does the rest: warm-up,
interleaved rounds, failures. `Unsupported` marks a feature a peer lacks.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import statistics
import struct
import subprocess
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from bench import envs, loadgen, systems
from bench.procs import (
    cpu_seconds,
    descendants,
    reset_peak_rss,
    status_kib,
    tree_cpu_seconds,
)
from bench.systems import (
    BASELINE,
    COGSERVE,
    COGSERVE_METRICS_OFF,
    COGSERVE_ONE_WORKER,
    COGSERVE_STORE_MEMORY,
    COGSERVE_UNBATCHED,
    FLOOR,
    LITSERVE,
    MLSERVER,
    OURS,
    REFERENCE,
    Server,
)

MODELS = envs.BENCH / "models"
BODIES = envs.CACHE / "bodies"
MIB = 1024 * 1024
JSON = {"Content-Type": "application/json"}


class Unsupported(RuntimeError):
    """The system lacks the feature; recorded as `not supported: <reason>`."""


class Unavailable(RuntimeError):
    """The scenario cannot run at all here (e.g. its model folder is missing)."""


@dataclass(frozen=True)
class Figure:
    name: str
    unit: str
    higher_is_better: bool


@dataclass
class Context:
    wrk: str
    rounds: int
    seconds: float          # one measured wrk run
    warmup_s: float
    repeats: int            # single-request scenarios: requests per round
    upload_url: str = ""    # the bench's own upload receiver (file output by upload)
    cache: dict[str, Any] = field(default_factory=dict)


def body_file(name: str, make: Any) -> pathlib.Path:
    """A request body written once under bench/.cache/bodies/."""
    path = BODIES / name
    if not path.exists():
        BODIES.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(make())
        tmp.rename(path)
    return path


class Scenario:
    key = ""
    number = ""
    title = ""
    model = ""                       # folder under bench/models/
    systems: tuple[str, ...] = (COGSERVE, REFERENCE, FLOOR)
    figures: tuple[Figure, ...] = ()
    restart_each_round = False       # cold start: measure() starts its own server
    # a server started anew (and warmed up) for each round, not once for all: where a
    # model's buffers fall in memory is drawn at each launch (bench/FINDINGS.md, fourteenth
    # session), and a C decode ran 20% slower in one draw than in another for a server's
    # whole life, so a rate bound by such work takes a new draw each round
    relaunch_each_round = False
    with_baseline = True             # `--baseline REF` adds cogserve at REF to `systems`

    def lineup(self, baseline: bool) -> tuple[str, ...]:
        """The systems to run, in order: the baseline (if any) right after cogserve."""
        if not (baseline and self.with_baseline and COGSERVE in self.systems):
            return self.systems
        at = self.systems.index(COGSERVE) + 1
        return (*self.systems[:at], BASELINE, *self.systems[at:])

    def model_dir(self, system: str) -> pathlib.Path:
        return MODELS / self.model

    def prepare(self, ctx: Context) -> None:
        """Check the model folders exist; write the reference's schema file."""
        for system in self.systems:
            if system == FLOOR:
                continue
            folder = self.model_dir(system)
            if not (folder / "cog.yaml").exists() and not any(folder.glob("*settings.json")):
                raise Unavailable(f"model folder bench/models/{folder.name} is missing")
        if REFERENCE in self.systems:
            systems.write_reference_schema(self.model_dir(REFERENCE))

    def env(self, system: str) -> dict[str, str]:
        return {}

    def args(self, system: str, ctx: Context) -> list[str]:
        return []

    def start(self, system: str, ctx: Context) -> Server:
        model = None if system == FLOOR else self.model_dir(system)
        return systems.start(system, model, tag=self.key, env=self.env(system),
                             args=self.args(system, ctx))

    def warmup(self, server: Server, ctx: Context) -> None:
        self.measure(server, ctx)

    def measure(self, server: Server, ctx: Context) -> dict[str, float]:
        raise NotImplementedError


# ---------------------------------------------------------------- 1, 2, 3: request rates


PARENT_CPU = "parent CPU per prediction"
WORKER_CPU = "worker CPU per prediction"
# utime+stime from /proc around the measured run, over its successful responses (so a
# system's 409s are paid for by the predictions it did serve); "worker" is every
# descendant of the server process (0 for the floor, which has none)
CPU_FIGURES = (Figure(PARENT_CPU, "µs", False), Figure(WORKER_CPU, "µs", False))
TREE_CPU = "CPU per prediction, all processes"


class _WrkScenario(Scenario):
    connections = 1
    path = "/predictions"

    def body(self) -> pathlib.Path:
        raise NotImplementedError

    def run_wrk(self, server: Server, ctx: Context, seconds: float) -> loadgen.WrkResult:
        return loadgen.wrk(ctx.wrk, server.url + self.path, connections=self.connections,
                           seconds=seconds, body=self.body(), headers=JSON)

    def run_with_cpu(self, server: Server, ctx: Context) -> tuple[loadgen.WrkResult,
                                                                   dict[str, float]]:
        """One measured run, and the server's CPU per successful prediction during it."""
        assert server.proc is not None
        parent_0, workers_0 = tree_cpu_seconds(server.proc.pid)
        r = self.run_wrk(server, ctx, ctx.seconds)
        parent_1, workers_1 = tree_cpu_seconds(server.proc.pid)
        if r.ok == 0:
            raise RuntimeError(f"no successful response ({r.non_2xx} non-2xx, "
                               f"{r.socket_errors} socket errors)")
        return r, {PARENT_CPU: (parent_1 - parent_0) / r.ok * 1e6,
                   WORKER_CPU: max(0.0, workers_1 - workers_0) / r.ok * 1e6}

    def warmup(self, server: Server, ctx: Context) -> None:
        self.run_wrk(server, ctx, ctx.warmup_s)


class NoopSequential(_WrkScenario):
    key = "noop_seq"
    number = "1"
    title = "no-op sync, 1 sequential client"
    model = "noop"
    systems = (COGSERVE, COGSERVE_METRICS_OFF, COGSERVE_STORE_MEMORY, REFERENCE, FLOOR)
    # wrk's latencies cover every response, 409s included (the reference answers many)
    figures = (Figure("successful req/s", "req/s", True),
               Figure("p50, all responses", "ms", False),
               Figure("p99, all responses", "ms", False), Figure("non-2xx", "count", False),
               *CPU_FIGURES)

    def body(self) -> pathlib.Path:
        return body_file("noop.json", lambda: b'{"input":{"text":"hi"}}')

    def measure(self, server: Server, ctx: Context) -> dict[str, float]:
        r, cpu = self.run_with_cpu(server, ctx)
        return {"successful req/s": r.ok_per_s, "p50, all responses": r.p50_ms,
                "p99, all responses": r.p99_ms, "non-2xx": float(r.non_2xx + r.socket_errors),
                **cpu}


class NoopConcurrent(NoopSequential):
    key = "noop_8clients"
    systems = (COGSERVE, REFERENCE, FLOOR)
    number = "2"
    title = "no-op sync, 8 concurrent clients, 1 slot"
    connections = 8
    figures = (Figure("successful req/s", "req/s", True),
               Figure("409 responses", "count/round", False),
               Figure("other errors", "count/round", False), *CPU_FIGURES)

    def measure(self, server: Server, ctx: Context) -> dict[str, float]:
        r, cpu = self.run_with_cpu(server, ctx)
        return {"successful req/s": r.ok_per_s, "409 responses": float(r.conflicts),
                "other errors": float(r.other + r.socket_errors), **cpu}


class AsyncSlots(_WrkScenario):
    key = "async_16"
    number = "3"
    title = "async, 16 slots, run() awaits 10 ms, 16 clients"
    model = "async_sleep"
    connections = 16
    figures = (Figure("successful req/s", "req/s", True),
               Figure("fraction of ideal 1600/s", "", True),
               Figure("non-2xx", "count/round", False), *CPU_FIGURES)

    def env(self, system: str) -> dict[str, str]:
        return {"FLOOR_SLEEP_S": "0.01"} if system == FLOOR else {"COG_MAX_CONCURRENCY": "16"}

    def body(self) -> pathlib.Path:
        return body_file("async.json", lambda: b'{"input":{}}')

    def measure(self, server: Server, ctx: Context) -> dict[str, float]:
        r, cpu = self.run_with_cpu(server, ctx)
        return {"successful req/s": r.ok_per_s, "fraction of ideal 1600/s": r.ok_per_s / 1600,
                "non-2xx": float(r.non_2xx + r.socket_errors), **cpu}


# ---------------------------------------------------------------- 4: SSE


class SSETokens(Scenario):
    key = "sse"
    number = "4"
    title = "SSE, 10,000 tokens"
    model = "sse_tokens"
    tokens = 10_000
    figures = (Figure("tokens/s", "tokens/s", True), Figure("time to first token", "ms", False))

    def env(self, system: str) -> dict[str, str]:
        return {"FLOOR_TOKENS": str(self.tokens)} if system == FLOOR else {}

    def warmup(self, server: Server, ctx: Context) -> None:
        self._one(server)

    def _one(self, server: Server) -> loadgen.StreamTimes:
        got = loadgen.sse(server.url + "/predictions", b'{"input":{}}')
        if got.status == 406:
            raise Unsupported("406: SSE refused")
        if got.status != 200:
            raise RuntimeError(f"HTTP {got.status}")
        if got.tokens != self.tokens or not got.completed:
            raise RuntimeError(f"stream gave {got.tokens} tokens (want {self.tokens}), "
                               f"completed={got.completed}")
        return got

    def measure(self, server: Server, ctx: Context) -> dict[str, float]:
        runs = [self._one(server) for _ in range(max(1, ctx.repeats // 2))]
        return {"tokens/s": statistics.median(r.tokens / r.total_s for r in runs),
                "time to first token": statistics.median(r.first_token_s for r in runs) * 1000}


class OpenAIStream(Scenario):
    """The same token stream through /v1/chat/completions (`stream: true`) and through
    Cog's own SSE (`POST /predictions`), alternating request by request on one server.
    Besides the client's timings, the server process's own CPU per token for each path
    (utime+stime from /proc around each stream): steadier on a loaded machine."""

    key = "openai_sse"
    number = "4b"
    title = "OpenAI chat streaming against Cog's SSE, 10,000 tokens"
    model = "chat_tokens"
    systems = (COGSERVE,)
    with_baseline = False
    tokens = 10_000
    figures = (Figure("tokens/s, Cog SSE", "tokens/s", True),
               Figure("tokens/s, /v1/chat/completions", "tokens/s", True),
               Figure("tokens/s, /v1 over SSE", "x", True),
               Figure("time to first token, Cog SSE", "ms", False),
               Figure("time to first token, /v1/chat/completions", "ms", False),
               Figure("time to first token, /v1 over SSE", "x", False),
               Figure("parent CPU per token, Cog SSE", "µs", False),
               Figure("parent CPU per token, /v1/chat/completions", "µs", False),
               Figure("parent CPU per token, /v1 over SSE", "x", False))
    chat = (b'{"model":"chat_tokens","stream":true,'
            b'"messages":[{"role":"user","content":"go"}]}')

    def warmup(self, server: Server, ctx: Context) -> None:
        self._pair(server)

    def _pair(self, server: Server) -> list[tuple[loadgen.StreamTimes, float]]:
        """One stream through each path: its times and the server's CPU seconds."""
        assert server.proc is not None
        pid = server.proc.pid
        got = []
        for name, url, body, marker, end in (
                ("SSE", "/predictions", b'{"input":{"prompt":"go"}}', b"event: output",
                 b"event: completed"),
                ("/v1", "/v1/chat/completions", self.chat, b'"delta":{"content":',
                 b"data: [DONE]")):
            cpu = cpu_seconds(pid)
            times = loadgen.sse(server.url + url, body, marker=marker, end=end)
            cpu = cpu_seconds(pid) - cpu
            if times.status != 200 or times.tokens != self.tokens or not times.completed:
                raise RuntimeError(f"{name}: HTTP {times.status}, {times.tokens} tokens (want "
                                   f"{self.tokens}), completed={times.completed}")
            got.append((times, cpu))
        return got

    def measure(self, server: Server, ctx: Context) -> dict[str, float]:
        pairs = [self._pair(server) for _ in range(max(1, ctx.repeats // 2))]

        def med(path: int, of: Any) -> float:
            return statistics.median(of(pair[path]) for pair in pairs)

        rate = [med(i, lambda p: p[0].tokens / p[0].total_s) for i in (0, 1)]
        first = [med(i, lambda p: p[0].first_token_s * 1000) for i in (0, 1)]
        cpu = [med(i, lambda p: p[1] / p[0].tokens * 1e6) for i in (0, 1)]
        return {"tokens/s, Cog SSE": rate[0], "tokens/s, /v1/chat/completions": rate[1],
                "tokens/s, /v1 over SSE": rate[1] / rate[0],
                "time to first token, Cog SSE": first[0],
                "time to first token, /v1/chat/completions": first[1],
                "time to first token, /v1 over SSE": first[1] / first[0],
                "parent CPU per token, Cog SSE": cpu[0],
                "parent CPU per token, /v1/chat/completions": cpu[1],
                "parent CPU per token, /v1 over SSE": cpu[1] / cpu[0]}


# ---------------------------------------------------------------- 5: file output


class FileDataURL(Scenario):
    key = "file_dataurl"
    number = "5a"
    title = "50 MiB file output as a data URL"
    model = "file_output"
    systems = (COGSERVE, REFERENCE)
    figures = (Figure("wall time", "s", False), Figure("parent peak RSS", "MiB", False))
    expect_prefix = "data:"

    def warmup(self, server: Server, ctx: Context) -> None:
        self._one(server)

    def _one(self, server: Server) -> tuple[float, float]:
        assert server.proc is not None
        pid = server.proc.pid
        if not reset_peak_rss(pid):
            raise RuntimeError("cannot reset peak RSS (/proc/PID/clear_refs)")
        got = loadgen.request(server.url + "/predictions", body=b'{"input":{}}', headers=JSON)
        peak = status_kib(pid, "VmHWM") / 1024
        if got.status != 200:
            raise RuntimeError(f"HTTP {got.status}: {got.body[:200]!r}")
        doc = json.loads(got.body)
        output = doc.get("output")
        first = output[0] if isinstance(output, list) and output else output
        if doc.get("status") != "succeeded" or not isinstance(first, str) \
                or not first.startswith(self.expect_prefix):
            raise RuntimeError(f"status {doc.get('status')}, error {doc.get('error')!r}, "
                               f"output {str(first)[:60]!r}")
        return got.seconds, peak

    def measure(self, server: Server, ctx: Context) -> dict[str, float]:
        runs = [self._one(server) for _ in range(max(1, ctx.repeats // 2))]
        return {"wall time": statistics.median(r[0] for r in runs),
                "parent peak RSS": max(r[1] for r in runs)}


class FileUpload(FileDataURL):
    key = "file_upload"
    number = "5b"
    title = "50 MiB file output by upload (PUT to a local receiver)"
    expect_prefix = "http"

    def args(self, system: str, ctx: Context) -> list[str]:
        return ["--upload-url", ctx.upload_url]


# ---------------------------------------------------------------- 6: large JSON input


class LargeInput(Scenario):
    key = "json_7mib"
    number = "6"
    title = "7 MiB JSON input"
    model = "big_input"
    figures = (Figure("latency", "ms", False),)

    def body(self) -> bytes:
        path = body_file("big7.json", lambda: json.dumps(
            {"input": {"text": "a" * (7 * MIB)}}).encode())
        return path.read_bytes()

    def warmup(self, server: Server, ctx: Context) -> None:
        self._one(server, self.body())

    def _one(self, server: Server, body: bytes) -> float:
        got = loadgen.request(server.url + "/predictions", body=body, headers=JSON)
        if got.status != 200:
            raise RuntimeError(f"HTTP {got.status}: {got.body[:200]!r}")
        if server.system != FLOOR and json.loads(got.body).get("output") != 7 * MIB:
            raise RuntimeError(f"wrong output: {got.body[:200]!r}")
        return got.seconds

    def measure(self, server: Server, ctx: Context) -> dict[str, float]:
        body = self.body()
        return {"latency": statistics.median(self._one(server, body)
                                             for _ in range(ctx.repeats)) * 1000}


# ---------------------------------------------------------------- 7: cold start


class ColdStart(Scenario):
    key = "cold_start"
    number = "7"
    title = "cold start (no-op model)"
    model = "noop"
    restart_each_round = True
    figures = (Figure("process start to READY", "s", False),
               Figure("idle RSS, all processes", "MiB", False))

    def warmup(self, server: Server, ctx: Context) -> None:
        pass

    def measure(self, server: Server, ctx: Context) -> dict[str, float]:
        started = self.start(server.system, ctx)
        try:
            time.sleep(1.0)  # let it settle: idle, not mid-startup
            assert started.proc is not None
            rss = started.proc.rss_kib() / 1024
        finally:
            started.stop()
        return {"process start to READY": started.ready_s, "idle RSS, all processes": rss}


class ColdStartEnv(Scenario):
    """Cold start of a model that declares a package: its environment built, then reused.

    Environments go to bench/.cache/model-envs; uv keeps its download cache, so "built"
    is a build from cached wheels (what a second model with the same packages costs).
    The reuse figure against --no-env on the same model is what finding a ready
    environment and starting the worker with its interpreter add to start-up.
    """

    key = "cold_start_env"
    number = "7b"
    title = "cold start, model declaring pillow (environment)"
    model = "deps"
    systems = (COGSERVE,)
    restart_each_round = True
    with_baseline = False  # measure() starts the working tree's cogserve by name
    figures = (Figure("start to READY, environment built", "s", False),
               Figure("start to READY, environment reused", "s", False),
               Figure("start to READY, --no-env", "s", False),
               Figure("reused minus --no-env", "ms", False),
               Figure("finding the ready environment, fresh process", "ms", False))
    pairs = 3  # reuse / --no-env starts per round, alternated (medians): start-up is noisy

    def env(self, system: str) -> dict[str, str]:
        return {"COGSERVE_ENV_DIR": str(envs.CACHE / "model-envs")}

    def warmup(self, server: Server, ctx: Context) -> None:
        pass

    def _ready_s(self, tag: str, args: list[str]) -> float:
        started = systems.start(COGSERVE, self.model_dir(COGSERVE), tag=f"{self.key}-{tag}",
                                env=self.env(COGSERVE), args=args, timeout=300)
        started.stop()
        return started.ready_s

    def _lookup_ms(self) -> float:
        """What serve adds before starting the worker: import cogserve.envs, read cog.yaml
        and the build spec, hash it (with cogserve's own files), stat the environment."""
        code = ("import cogserve.cli.main, cogserve.http.server, cogserve.runtime.service\n"
                "import time; t = time.perf_counter()  # what serve imports anyway is not\n"
                "from cogserve.model.config import load_config\n"
                "from cogserve.envs import model_env\n"
                f"e = model_env.for_model(load_config({str(self.model_dir(COGSERVE))!r}))\n"
                "assert e.find_ready() is not None\n"
                "print((time.perf_counter() - t) * 1000)")
        python = envs.venv(COGSERVE) / "bin" / "python"
        # -P: the cogserve installed in the venv, the one `serve` ran, not the checkout
        # that `-c` would import from the working directory (another digest, another key)
        done = subprocess.run([str(python), "-P", "-c", code],
                              env={**os.environ, **self.env(COGSERVE)},
                              capture_output=True, text=True, check=True, timeout=60)
        return float(done.stdout.split()[-1])

    def measure(self, server: Server, ctx: Context) -> dict[str, float]:
        binary = envs.venv(COGSERVE) / "bin" / "cogserve"
        subprocess.run([str(binary), "env", str(self.model_dir(COGSERVE)), "--remove"],
                       env={**os.environ, **self.env(COGSERVE)}, check=True,
                       capture_output=True, timeout=60)
        built = self._ready_s("build", [])
        reused, own = [], []
        for _ in range(self.pairs):
            reused.append(self._ready_s("reuse", []))
            own.append(self._ready_s("no-env", ["--no-env"]))
        lookups = [self._lookup_ms() for _ in range(5)]
        return {"start to READY, environment built": built,
                "start to READY, environment reused": statistics.median(reused),
                "start to READY, --no-env": statistics.median(own),
                "reused minus --no-env": (statistics.median(reused) - statistics.median(own))
                * 1000,
                "finding the ready environment, fresh process": statistics.median(lookups)}


# ---------------------------------------------------------------- 8: V2 infer


N_FLOATS = 1_000_000


def _floats() -> list[float]:
    return [(i % 256) * 0.25 for i in range(N_FLOATS)]


def _expected_sum() -> float:
    return sum(k * 0.25 for k in range(256)) * (N_FLOATS // 256) + sum(
        (i % 256) * 0.25 for i in range(N_FLOATS - N_FLOATS % 256, N_FLOATS))


class V2Json(Scenario):
    key = "v2_json"
    number = "8a"
    title = "V2 infer, FP32[1,000,000] sum, JSON"
    model = "v2_sum"
    systems = (COGSERVE, MLSERVER, FLOOR)
    figures = (Figure("successful req/s", "req/s", True), Figure("p50", "ms", False))
    binary = False

    def model_dir(self, system: str) -> pathlib.Path:
        return MODELS / ("v2_sum_mlserver" if system == MLSERVER else "v2_sum")

    def model_name(self) -> str:
        """The MLServer model's name (model-settings.json); cogserve is started with it."""
        for settings in sorted(self.model_dir(MLSERVER).rglob("model-settings.json")):
            return str(json.loads(settings.read_text()).get("name", "sum"))
        return "sum"

    def args(self, system: str, ctx: Context) -> list[str]:
        return ["--model-name", self.model_name()] if system in OURS else []

    def infer_url(self, server: Server) -> str:
        return f"{server.url}/v2/models/{urllib.parse.quote(self.model_name())}/infer"

    def input_name(self, server: Server) -> str:
        """The first input the model's metadata names (`x` if it names none)."""
        if server.system == FLOOR:
            return "x"
        got = loadgen.request(f"{server.url}/v2/models/{self.model_name()}", method="GET")
        try:
            inputs = json.loads(got.body).get("inputs") or []
            return str(inputs[0]["name"]) if inputs else "x"
        except (ValueError, KeyError, IndexError, AttributeError):
            return "x"

    def request(self, name: str) -> tuple[pathlib.Path, dict[str, str]]:
        if not self.binary:
            path = body_file(f"v2-{name}.json", lambda: json.dumps({"inputs": [{
                "name": name, "shape": [N_FLOATS], "datatype": "FP32", "data": _floats()}]},
                separators=(",", ":")).encode())
            return path, JSON
        header = json.dumps({"inputs": [{
            "name": name, "shape": [N_FLOATS], "datatype": "FP32",
            "parameters": {"binary_data_size": 4 * N_FLOATS}}]}, separators=(",", ":")).encode()
        path = body_file(f"v2-{name}.bin",
                         lambda: header + struct.pack(f"<{N_FLOATS}f", *_floats()))
        return path, {"Content-Type": "application/octet-stream",
                      "Inference-Header-Content-Length": str(len(header))}

    def warmup(self, server: Server, ctx: Context) -> None:
        """Check one answer (the sum) before any timing; then a wrk warm-up."""
        path, headers = self.request(self.input_name(server))
        got = loadgen.request(self.infer_url(server), body=path.read_bytes(), headers=headers)
        if got.status != 200:
            message = " ".join(got.body[:120].decode(errors="replace").split())
            if self.binary and server.system not in OURS:
                # MLServer 1.7.1's REST front end parses every body as JSON: a binary
                # tensor body gets a 500 from its JSON decoder
                raise Unsupported(f"binary tensor request body refused: HTTP {got.status}")
            raise RuntimeError(f"HTTP {got.status}: {message}")
        if server.system != FLOOR:
            _check_sum(got.body)
        ctx.cache[f"{self.key}:{server.system}"] = (path, headers)
        loadgen.wrk(ctx.wrk, self.infer_url(server), connections=1, seconds=ctx.warmup_s,
                    body=path, headers=headers)

    def measure(self, server: Server, ctx: Context) -> dict[str, float]:
        path, headers = ctx.cache[f"{self.key}:{server.system}"]
        # a JSON round trip takes ~0.1-0.3 s: a run shorter than 2 s counts too few
        r = loadgen.wrk(ctx.wrk, self.infer_url(server), connections=1,
                        seconds=max(2.0, ctx.seconds), body=path, headers=headers)
        if r.ok == 0:
            raise RuntimeError(f"no successful response ({r.non_2xx} non-2xx)")
        return {"successful req/s": r.ok_per_s, "p50": r.p50_ms}


class V2Binary(V2Json):
    key = "v2_binary"
    number = "8b"
    title = "V2 infer, FP32[1,000,000] sum, binary tensor extension"
    binary = True


def _check_sum(body: bytes) -> None:
    doc = json.loads(body)
    try:
        value = float(doc["outputs"][0]["data"][0])
    except (KeyError, IndexError, TypeError, ValueError):
        raise RuntimeError(f"no sum in the answer: {body[:200]!r}") from None
    want = _expected_sum()
    if abs(value - want) > 1e-3 * want:
        raise RuntimeError(f"sum {value} != {want}")


# ---------------------------------------------------------------- 9: CPU-bound, worker pools

POOL_ARGS = ["--workers", "2", "--queue-size", "64"]


class CPUPool(_WrkScenario):
    """8 clients on a sync model doing ~20 ms of pure-Python work (issue 14).

    `cogserve` runs with --workers 2 --queue-size 64; the same with one worker (the
    variant COGSERVE_ONE_WORKER) shows what the pool adds, the reference shows Cog's 409s
    under the same load, and LitServe serves the same work function with
    workers_per_device=2.
    """

    key = "cpu_pool"
    number = "9"
    title = "CPU-bound sync (~20 ms pure Python), 8 clients; cogserve --workers 2 --queue-size 64"
    model = "cpu_sync"
    connections = 8
    systems = (COGSERVE, COGSERVE_ONE_WORKER, REFERENCE, LITSERVE)
    figures = (Figure("successful req/s", "req/s", True),
               Figure("p50, all responses", "ms", False),
               Figure("p99, all responses", "ms", False),
               Figure("non-2xx", "count/round", False))

    def prepare(self, ctx: Context) -> None:
        if not (self.model_dir(COGSERVE) / "litserve_app.py").exists():
            raise Unavailable("bench/models/cpu_sync/litserve_app.py is missing")
        super().prepare(ctx)

    def args(self, system: str, ctx: Context) -> list[str]:
        return POOL_ARGS if system in OURS else []

    def body(self) -> pathlib.Path:
        # no n: every system runs the model's default (work.ITERATIONS, ~20 ms)
        return body_file("cpu-default.json", lambda: b'{"input":{}}')

    def run_wrk(self, server: Server, ctx: Context, seconds: float) -> loadgen.WrkResult:
        path = "/predict" if server.system == LITSERVE else self.path
        return loadgen.wrk(ctx.wrk, server.url + path, connections=self.connections,
                           seconds=seconds, body=self.body(), headers=JSON)

    def measure(self, server: Server, ctx: Context) -> dict[str, float]:
        r = self.run_wrk(server, ctx, ctx.seconds)
        return {"successful req/s": r.ok_per_s, "p50, all responses": r.p50_ms,
                "p99, all responses": r.p99_ms, "non-2xx": float(r.non_2xx + r.socket_errors)}


BATCHED_ARGS = ["--queue-size", "64", "--predictor", "batched.py:Runner"]


class MLPBatch(CPUPool):
    """16 clients on a numpy MLP that gains from batching on a CPU (issue 26).

    `cogserve` serves bench/models/mlp/batched.py (`@batch(max_size=16, max_wait=0.005)`)
    with --queue-size 64; `cogserve-unbatched` the same folder's one-request run.py with
    the same queue; LitServe its batching with the same limits (litserve_app.py); the
    reference run.py, one request at a time (Cog has no batching, and without a queue
    it answers 409 to the requests that find its slot busy).
    """

    key = "mlp_batch"
    number = "11"
    title = ("numpy MLP 2048-4096-1000, 16 clients; cogserve @batch(max_size=16, "
             "max_wait=5 ms) vs unbatched, LitServe batching, the reference")
    model = "mlp"
    connections = 16
    systems = (COGSERVE, COGSERVE_UNBATCHED, LITSERVE, REFERENCE)

    def prepare(self, ctx: Context) -> None:
        if not (self.model_dir(COGSERVE) / "litserve_app.py").exists():
            raise Unavailable("bench/models/mlp/litserve_app.py is missing")
        Scenario.prepare(self, ctx)

    def args(self, system: str, ctx: Context) -> list[str]:
        return BATCHED_ARGS if system in OURS else []

    figures = (*CPUPool.figures, Figure(TREE_CPU, "µs", False))

    def body(self) -> pathlib.Path:
        return body_file("mlp-seed.json", lambda: b'{"input":{"seed":7}}')

    def measure(self, server: Server, ctx: Context) -> dict[str, float]:
        # the CPU of the whole process tree: LitServe's HTTP server runs in child
        # processes, so a parent/worker split would compare different things
        r, cpu = self.run_with_cpu(server, ctx)
        return {"successful req/s": r.ok_per_s, "p50, all responses": r.p50_ms,
                "p99, all responses": r.p99_ms, "non-2xx": float(r.non_2xx + r.socket_errors),
                TREE_CPU: cpu[PARENT_CPU] + cpu[WORKER_CPU]}


# ---------------------------------------------------------------- 12: CPU proxy of the GPU path

IMAGE_ARGS = ["--queue-size", "64", "--predictor", "batched.py:Runner"]
RUN_CPU = "run() CPU per prediction"
WORKER_OUTSIDE = "worker CPU per prediction outside run()"
FRONT_CPU = "front-end CPU per prediction, all its processes"
FRONT_MAX = "front-end CPU per prediction, busiest process"
BATCH_MEAN = "mean batch size"
# the model answers its decode CPU so far instead of decoding (a one-byte image)
STATS_BODY = b'{"input":{"image":"data:image/jpeg;base64,AA==","stats":true}}'


class ImageDecode(_WrkScenario):
    """Issue 35's file input without the GPU: 32 clients each send a 224x224 JPEG (~30 KB)
    as a data URL to a `Path` input of a model whose run() only decodes it (Pillow).

    `cogserve` serves bench/models/image_decode/batched.py (`@batch(max_size=32,
    max_wait=2 ms)`, one worker, --queue-size 64), `cogserve-unbatched` the same folder's
    run.py; LitServe batches the same decode with the same limits (litserve_app.py).
    The same image uploaded as a form is scenario 12e. The model counts its own decode
    CPU (a `stats` request asks for it), so the worker's CPU outside run() is the server's
    own: the "worker" is the process that ran run(); the front end is every other process
    of the server (cogserve's parent; LitServe's main process and its API server
    processes).
    """

    key = "image_decode"
    number = "12"
    relaunch_each_round = True  # the decode's speed is a draw per launch
    title = ("CPU proxy of the GPU path: 224x224 JPEG data URL to a Path input, run() "
             "decodes; 32 clients; @batch(32, 2 ms) vs unbatched, LitServe batching")
    model = "image_decode"
    connections = 32
    headers = JSON  # the body's type: body()'s data URL in JSON
    systems = (COGSERVE, COGSERVE_UNBATCHED, LITSERVE)
    figures = (Figure("successful req/s", "req/s", True),
               Figure("p50, all responses", "ms", False),
               Figure("non-2xx", "count/round", False),
               Figure(RUN_CPU, "µs", False), Figure(WORKER_OUTSIDE, "µs", False),
               Figure(FRONT_CPU, "µs", False), Figure(FRONT_MAX, "µs", False),
               Figure(TREE_CPU, "µs", False), Figure(BATCH_MEAN, "requests", True))

    def prepare(self, ctx: Context) -> None:
        if not (self.model_dir(COGSERVE) / "litserve_app.py").exists():
            raise Unavailable("bench/models/image_decode/litserve_app.py is missing")
        Scenario.prepare(self, ctx)

    def args(self, system: str, ctx: Context) -> list[str]:
        return IMAGE_ARGS if system in OURS else []

    def body(self) -> pathlib.Path:
        def make() -> bytes:
            jpeg = BODIES / "image-224.jpg"
            subprocess.run([str(envs.venv(COGSERVE) / "bin" / "python"),
                            str(self.model_dir(COGSERVE) / "make_image.py"), str(jpeg)],
                           check=True, capture_output=True, timeout=60)
            url = "data:image/jpeg;base64," + base64.b64encode(jpeg.read_bytes()).decode()
            return json.dumps({"input": {"image": url}}).encode()
        return body_file("image-224-dataurl.json", make)

    def run_wrk(self, server: Server, ctx: Context, seconds: float) -> loadgen.WrkResult:
        path = "/predict" if server.system == LITSERVE else self.path
        return loadgen.wrk(ctx.wrk, server.url + path, connections=self.connections,
                           seconds=seconds, body=self.body(), headers=self.headers)

    def _stats(self, server: Server) -> tuple[int, float, int]:
        """The model's process, its decode CPU so far and its count of images."""
        path = "/predict" if server.system == LITSERVE else self.path
        got = loadgen.request(server.url + path, body=STATS_BODY,
                              headers=JSON)
        if got.status not in (200, 201):
            raise RuntimeError(f"stats: HTTP {got.status}: {got.body[:200]!r}")
        stats = json.loads(json.loads(got.body)["output"])
        return int(stats["pid"]), float(stats["run_cpu_s"]), int(stats["images"])

    def warmup(self, server: Server, ctx: Context) -> None:
        got = loadgen.request(server.url + ("/predict" if server.system == LITSERVE
                                            else self.path),
                              body=self.body().read_bytes(), headers=self.headers)
        if got.status not in (200, 201) or json.loads(got.body).get("output") != "224x224":
            raise RuntimeError(f"HTTP {got.status}: {got.body[:200]!r}")
        self.run_wrk(server, ctx, ctx.warmup_s)

    def measure(self, server: Server, ctx: Context) -> dict[str, float]:
        assert server.proc is not None
        pid, run_0, _ = self._stats(server)
        pids = [server.proc.pid, *descendants(server.proc.pid)]
        batches_0 = loadgen.batch_totals(server.url)
        before = {p: cpu_seconds(p) for p in pids}
        r = self.run_wrk(server, ctx, ctx.seconds)
        after = {p: cpu_seconds(p) for p in pids}
        batches_1 = loadgen.batch_totals(server.url)
        _, run_1, _ = self._stats(server)
        if r.ok == 0:
            raise RuntimeError(f"no successful response ({r.non_2xx} non-2xx)")
        used = {p: max(0.0, after[p] - before[p]) / r.ok * 1e6 for p in pids}
        front = [cpu for p, cpu in used.items() if p != pid]
        run_cpu = (run_1 - run_0) / r.ok * 1e6
        figures = {"successful req/s": r.ok_per_s, "p50, all responses": r.p50_ms,
                   "p99, all responses": r.p99_ms,
                   "non-2xx": float(r.non_2xx + r.socket_errors), RUN_CPU: run_cpu,
                   WORKER_OUTSIDE: used.get(pid, 0.0) - run_cpu, FRONT_CPU: sum(front),
                   FRONT_MAX: max(front, default=0.0), TREE_CPU: sum(used.values())}
        mean = loadgen.mean_batch(batches_0, batches_1)
        if mean is not None:
            figures[BATCH_MEAN] = mean
        return figures


class ImageDecode64(ImageDecode):
    """Scenario 12 with 64 clients: while one batch of 32 runs, the next 32 wait, so the
    worker can prepare that batch during the call (a batch sent ahead, issue 35)."""

    key = "image_decode_64"
    number = "12b"
    title = ("CPU proxy of the GPU path, 64 clients: scenario 12's JPEG data URL; "
             "@batch(32, 2 ms) vs unbatched, LitServe batching")
    connections = 64


class ImageOneClient(ImageDecode):
    """Scenario 12 with one client that sends its next request as soon as it has its
    answer: the batch it makes is itself, so a batched model should answer it about as
    fast as the same model without `@batch` (issue 35: it waited `max_wait` each time)."""

    key = "image_one_client"
    number = "12d"
    title = ("One sequential client on scenario 12's model: @batch(32, 2 ms) vs unbatched, "
             "LitServe batching")
    connections = 1
    figures = (Figure("successful req/s", "req/s", True),
               Figure("p50, all responses", "ms", False),
               Figure("p99, all responses", "ms", False),
               Figure("non-2xx", "count/round", False), Figure(BATCH_MEAN, "requests", True))


class ImageWait(ImageDecode):
    """Scenario 12 with a GPU-shaped run(): each call reads its images' headers and waits
    35 ms whatever its size (`BENCH_RUN_WAIT_S`), leaving the CPU to the server as a
    CUDA call does. With 32 clients and batches of up to 32 the rate is how full the
    batches are over how long the server leaves between calls: how batches form under
    a closed loop, the part of the GPU's idle time that is the server's (issue 35)."""

    key = "image_wait"
    number = "12c"
    title = ("GPU-shaped CPU proxy: scenario 12's JPEG data URL, run() waits 35 ms per "
             "call; 32 clients; @batch(32, 2 ms) vs LitServe batching")
    systems = (COGSERVE, LITSERVE)
    figures = (Figure("successful req/s", "req/s", True),
               Figure("p50, all responses", "ms", False),
               Figure("non-2xx", "count/round", False),
               Figure(FRONT_CPU, "µs", False), Figure(BATCH_MEAN, "requests", True))

    def env(self, system: str) -> dict[str, str]:
        return {"BENCH_RUN_WAIT_S": "0.035"}



FORM_BOUNDARY = "cogserve-bench-form-7d1c"
FORM = {"Content-Type": f"multipart/form-data; boundary={FORM_BOUNDARY}"}


class ImageForm(ImageDecode):
    """Scenario 12 with the JPEG uploaded as a form (`curl -F image=@photo.jpg`): one
    multipart part named `image`, the file's 31.8 KB as they are, where a data URL makes
    them 42 KB of base64 inside JSON. cogserve reads the form into the data URL a JSON
    client would have sent (http/form_document.py); LitServe parses it with starlette
    (python-multipart) and its decode_request reads the uploaded bytes. Forms are new in
    cogserve (issue 35), so no baseline runs: scenario 12 in the same run is the data URL's
    figure to hold it against."""

    key = "image_form"
    number = "12e"
    title = ("CPU proxy of the GPU path, the JPEG uploaded as multipart/form-data; 32 "
             "clients; @batch(32, 2 ms) vs LitServe batching")
    systems = (COGSERVE, LITSERVE)
    with_baseline = False
    headers = FORM

    def env(self, system: str) -> dict[str, str]:
        return {"BENCH_FORM": "1"} if system == LITSERVE else {}

    def body(self) -> pathlib.Path:
        def make() -> bytes:
            jpeg = BODIES / "image-224.jpg"
            if not jpeg.exists():
                super(ImageForm, self).body()  # scenario 12's body makes the JPEG
            return (f"--{FORM_BOUNDARY}\r\n"
                    'Content-Disposition: form-data; name="image"; filename="photo.jpg"\r\n'
                    "Content-Type: image/jpeg\r\n\r\n").encode() + jpeg.read_bytes() + \
                f"\r\n--{FORM_BOUNDARY}--\r\n".encode()
        return body_file("image-224-form.bin", make)
