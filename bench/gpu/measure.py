"""The GPU scenario's measurements, run by `bench/gpu/run` with the cogserve venv's Python
(which has nvidia-ml-py for the sampling; the servers each run from their own venv).

One server at a time on 127.0.0.1: cogserve with `@batch(max_size=32, max_wait=0.002)`
and without it at `--workers 1, 2, 4` (`--gpus` the machine's first GPU, `--queue-size
256` so closed-loop clients wait instead of being refused), LitServe with the same batch
limits at `workers_per_device` 1, 2, 4, and the reference (coglet 0.23.1, one
prediction at a time: its 409s are counted, as Cog answers them). Each point is wrk's
closed loop (bench/loadgen.py) of N connections posting one 224x224 JPEG to the `image`
input, as a data URL in a JSON body ({"input": {"image": "data:image/jpeg;base64,..."}},
what Cog's API takes); then cogserve @batch and LitServe (its app's `--form` variant)
again with the same JPEG as a multipart/form-data upload (one file part `image`,
filename image.jpg, Content-Type image/jpeg: `curl -F image=@image.jpg`) at 1 and 4
workers, 32 to 128 clients (and 1 at one worker), after the reference, so a run short of
time loses these first. GPU 0 is sampled through NVML meanwhile (bench/gpu/nvml.py), each
process's CPU read from /proc before and after (bench/procs.py). Before the servers:
the model's in-process ceiling; after the first cogserve server is up, its /metrics GPU
series; then `cogserve predict` on the same image. Every answer's shape is checked (five
classes in 0..999, probabilities falling) and its top class compared with the
in-process one.

Results are written as they come (a run cut short keeps what it measured):
`OUT/gpu-results.json`, the table `OUT/gpu-results.md`, `OUT/RESULTS-snippet.md` for
bench/RESULTS.md naming the GPU, `OUT/run.log`, and each server's log under `OUT/logs/`.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import pathlib
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from bench import loadgen
from bench.gpu.nvml import Sampler, Window
from bench.procs import Proc, command_line, cpu_seconds, descendants, free_port
from bench.systems import predictor_ref

REPO = pathlib.Path(__file__).resolve().parents[2]
MODEL = REPO / "bench" / "models" / "gpu_resnet"
JSON = {"Content-Type": "application/json"}
# a multipart body's boundary: not in the JPEG (make_inputs checks), as a client picks one
BOUNDARY = "cogserve-bench-gpu-3f9c1e7a5b"
FORM = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}

# how the image travels: the request body's kind, a column of the table
DATA_URL = "data URL"
MULTIPART = "multipart"

BATCHED = "cogserve @batch"
PLAIN = "cogserve, no @batch"
LITSERVE = "LitServe, batching"
REFERENCE = "reference (coglet 0.23.1)"


@dataclass(frozen=True)
class Config:
    system: str
    workers: int
    clients: tuple[int, ...]
    body: str = DATA_URL

    @property
    def name(self) -> str:
        """The system, and its body where that is not the data URL every system gets."""
        return self.system if self.body == DATA_URL else f"{self.system}, {self.body}"


def configs(smoke: bool, workers: list[int] | None, systems: list[str] | None
            ) -> list[Config]:
    """What to run, in order: per worker count cogserve @batch, LitServe, cogserve
    unbatched; the reference (one worker: coglet has one); then the multipart uploads,
    cogserve @batch and LitServe (the two that batch; coglet takes JSON alone) at 1 and
    4 workers (smoke: 1 and 2; `workers` given: those), fewer points than the data
    URL's so the whole run fits its budget. `systems` picks by the words of a system's
    name and body ("multipart", "data URL")."""
    if smoke:
        first, more, reference, counts = (1, 4), (4,), (1, 4), [1, 2]
        form_first, form_more, form_counts = (1, 4), (4,), [1, 2]
    else:
        first, more, reference, counts = (1, 8, 32, 64, 128), (32, 64, 128), (1, 8, 32, 64), \
            [1, 2, 4]
        form_first, form_more, form_counts = (1, 32, 64, 128), (32, 64, 128), [1, 4]
    out = []
    for n in workers or counts:
        for system in (BATCHED, LITSERVE, PLAIN):
            out.append(Config(system, n, first if n == 1 else more))
    out.append(Config(REFERENCE, 1, reference))
    for n in workers or form_counts:
        for system in (BATCHED, LITSERVE):
            out.append(Config(system, n, form_first if n == 1 else form_more, MULTIPART))
    if systems:
        out = [c for c in out
               if any(s.lower() in f"{c.system}, {c.body}".lower() for s in systems)]
    return out


def multipart_body(data: bytes, *, name: str = "image", filename: str = "image.jpg",
                   content_type: str = "image/jpeg", boundary: str = BOUNDARY) -> bytes:
    """A multipart/form-data body of one file part, as `curl -F name=@filename` sends
    it (RFC 7578); sent with FORM's Content-Type (the default boundary's)."""
    if boundary.encode() in data:
        raise ValueError("the boundary occurs in the file: pick another")
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; "
            f"filename=\"{filename}\"\r\nContent-Type: {content_type}\r\n\r\n")
    return head.encode() + data + f"\r\n--{boundary}--\r\n".encode()


class CheckError(RuntimeError):
    pass


def check_top5(output: Any, where: str) -> list[int]:
    """An answer's shape: five classes in 0..999, probabilities in [0, 1], falling."""
    if not isinstance(output, dict):
        raise CheckError(f"{where}: output is not an object: {str(output)[:200]}")
    classes, probs = output.get("classes"), output.get("probabilities")
    if not (isinstance(classes, list) and isinstance(probs, list) and len(classes) == 5
            and len(probs) == 5):
        raise CheckError(f"{where}: not five classes and probabilities: {str(output)[:200]}")
    if not all(isinstance(c, int) and 0 <= c < 1000 for c in classes):
        raise CheckError(f"{where}: a class outside 0..999: {classes}")
    if not all(0.0 <= p <= 1.0 for p in probs) or probs != sorted(probs, reverse=True):
        raise CheckError(f"{where}: probabilities not in [0, 1] or not falling: {probs}")
    return classes


@dataclass
class Point:
    system: str
    workers: int
    clients: int
    ok_per_s: float
    p50_ms: float
    p99_ms: float
    non_2xx: int
    socket_errors: int
    gpu_util_mean: float | None
    gpu_util_max: float | None
    gpu_memory_mib: float | None
    worker_gpu_mib: list[float]
    parent_cpu_ms: float
    other_cpu_ms: float
    cpu_ms_by_process: dict[str, float] = field(default_factory=dict)
    mean_batch: float | None = None  # cogserve's batches (its /metrics), None for the others
    body: str = DATA_URL  # how the image was sent: DATA_URL (JSON) or MULTIPART


class Run:
    """One measuring session: its settings, its output folder, its log."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.smoke: bool = args.smoke
        self.seconds: float = args.seconds or (1.0 if self.smoke else 4.0)
        self.warmup: float = args.warmup if args.warmup is not None else (
            1.0 if self.smoke else 2.0)
        self.out: pathlib.Path = args.out
        self.venvs = {name: args.venvs / name for name in ("cogserve", "litserve", "reference")}
        self.wrk = str(args.wrk)
        (self.out / "logs").mkdir(parents=True, exist_ok=True)
        self.log_file = (self.out / "run.log").open("a")
        self.env = {"LOG_FORMAT": "console", "COGSERVE_STATE_DIR": str(self.out / "state")}
        # the smoke run's stand-in, unless BENCH_GPU_STANDIN=0 asks for the real network
        # on the CPU (torch and torchvision importable, e.g. through PYTHONPATH)
        if self.smoke and os.environ.get("BENCH_GPU_STANDIN") != "0":
            self.env["BENCH_GPU_STANDIN"] = "1"
        self.gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or "0"
        self.sampler = Sampler()
        self.points: list[Point] = []
        self.facts: dict[str, Any] = {"smoke": self.smoke, "seconds": self.seconds,
                                      "standin": self.env.get("BENCH_GPU_STANDIN") == "1"}
        self.image = self.out / "image.jpg"
        self.body = self.out / "body.json"
        self.form = self.out / "body.multipart"
        self.top1: int | None = None
        self.ceiling_procs = max(args.workers or [2 if self.smoke else 4])

    def say(self, text: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {text}"
        print(line, flush=True)
        self.log_file.write(line + "\n")
        self.log_file.flush()

    # ------------------------------------------------------------ inputs

    def make_inputs(self) -> None:
        """A 224x224 JPEG of a smooth pattern with noise (~30 KB, as a photo would be)."""
        import numpy as np
        from PIL import Image

        rng = np.random.default_rng(0)
        y, x = np.mgrid[0:224, 0:224].astype(np.float32)
        base = np.stack([128 + 100 * np.sin(x / 17), 128 + 100 * np.cos(y / 23),
                         128 + 60 * np.sin((x + y) / 31)], axis=-1)
        pixels = np.clip(base + rng.normal(0, 24, base.shape), 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(pixels).save(buf, format="JPEG", quality=90)
        self.image.write_bytes(buf.getvalue())
        url = "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()
        self.body.write_text(json.dumps({"input": {"image": url}}))
        self.form.write_bytes(multipart_body(buf.getvalue()))
        self.facts["image_bytes"] = len(buf.getvalue())
        self.facts["body_bytes"] = self.body.stat().st_size
        self.facts["multipart_body_bytes"] = self.form.stat().st_size
        self.say(f"input: {len(buf.getvalue())} byte JPEG, {self.body.stat().st_size} byte "
                 f"request body (a data URL), {self.form.stat().st_size} byte multipart body")

    def request_body(self, config: Config) -> tuple[pathlib.Path, dict[str, str]]:
        """The body file a config's requests carry and their headers."""
        return (self.form, FORM) if config.body == MULTIPART else (self.body, JSON)

    # ------------------------------------------------------------ in process

    def ceiling(self) -> None:
        python = self.venvs["cogserve"] / "bin" / "python"
        seconds = 1.0 if self.smoke else 3.0
        done = subprocess.run([str(python), str(MODEL / "ceiling.py"), str(self.image),
                               "--seconds", str(seconds), "--procs", str(self.ceiling_procs)],
                              capture_output=True, text=True,
                              env={**os.environ, **self.env}, timeout=600)
        if done.returncode != 0:
            raise CheckError(f"ceiling.py failed: {done.stderr[-1500:]}")
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        self.top1 = check_top5(figures.pop("top5"), "in process")[0]
        if not self.smoke and figures["device"] != "cuda":
            raise CheckError("torch sees no CUDA device: these would not be GPU figures")
        self.facts["ceiling"] = figures
        self.say(f"in-process ceiling: {json.dumps(figures)}")

    # ------------------------------------------------------------ servers

    def start(self, config: Config) -> tuple[Proc, str]:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        slug = re.sub(r"[^a-z0-9]+", "-", config.name.lower()).strip("-")
        log = self.out / "logs" / f"{slug}-w{config.workers}.log"
        env = dict(self.env)
        if config.system in (BATCHED, PLAIN):
            argv = [str(self.venvs["cogserve"] / "bin" / "cogserve"), "serve", str(MODEL),
                    "--host", "127.0.0.1", "--port", str(port),
                    "--workers", str(config.workers), "--gpus", self.gpu,
                    "--queue-size", "256"]
            if config.system == BATCHED:
                argv += ["--predictor", "batched.py:Runner"]
            health = url + "/health-check"
        elif config.system == LITSERVE:
            argv = [str(self.venvs["litserve"] / "bin" / "python"),
                    str(MODEL / "litserve_app.py"), "--port", str(port),
                    "--workers", str(config.workers)]
            if config.body == MULTIPART:
                argv.append("--form")
            health = url + "/health"
        else:
            self.reference_schema()
            bindir = self.venvs["reference"] / "bin"
            env.update({"COG_PREDICT_TYPE_STUB": predictor_ref(MODEL), "PORT": str(port),
                        "PATH": f"{bindir}:{os.environ.get('PATH', '')}"})
            argv = [str(bindir / "python"), "-m", "cog.server.http", "--host", "127.0.0.1"]
            health = url + "/health-check"
        proc = Proc(argv, cwd=MODEL, env=env, log=log)

        def ready(status: int, body: bytes) -> bool:
            if status != 200:
                return False
            if config.system == LITSERVE:
                return True
            try:
                return json.loads(body).get("status") == "READY"
            except ValueError:
                return False

        try:
            waited = loadgen.wait_http(health, ready=ready, timeout=300, alive=proc.alive)
        except loadgen.LoadError as exc:
            tail = proc.tail(20)
            proc.stop()
            raise CheckError(f"{config.name} x{config.workers} never got ready: {exc}\n"
                             f"{tail}") from None
        self.say(f"{config.name}, {config.workers} worker(s): ready in {waited:.1f} s "
                 f"(pid {proc.pid}, log {log.name})")
        return proc, url + ("/predict" if config.system == LITSERVE else "/predictions")

    def reference_schema(self) -> None:
        """The reference validates its input only with .cog/openapi_schema.json."""
        binary = self.venvs["cogserve"] / "bin" / "cogserve"
        done = subprocess.run([str(binary), "schema", str(MODEL), "-o",
                               str(MODEL / ".cog" / "openapi_schema.json")],
                              capture_output=True, text=True, env={**os.environ, **self.env})
        if done.returncode != 0:
            raise CheckError(f"cogserve schema failed: {done.stderr[-600:]}")

    def answer_check(self, config: Config, url: str) -> None:
        body, headers = self.request_body(config)
        got = loadgen.request(url, body=body.read_bytes(), headers=headers)
        if got.status != 200:
            raise CheckError(f"{config.name}: {got.status} {got.body[:300]!r}")
        top = check_top5(json.loads(got.body)["output"], config.name)
        agree = "matches" if top[0] == self.top1 else f"differs from {self.top1}"
        self.say(f"  one request: 200 in {got.seconds * 1e3:.1f} ms, top-5 {top} "
                 f"(top class {agree} in process)")

    def metrics_check(self, base: str, proc: Proc) -> None:
        """cogserve's own GPU series: present with a GPU (the `gpu` extra is installed),
        absent without one; and the startup log names each worker's GPU."""
        got = loadgen.request(base + "/metrics", method="GET")
        lines = [x for x in got.body.decode().splitlines()
                 if "gpu" in x and not x.startswith("#")]
        if self.sampler.available and not any(
                x.startswith("cogserve_gpu_utilization_ratio") for x in lines):
            raise CheckError(f"/metrics has no GPU series on a GPU: {lines[:5]}")
        if not self.sampler.available and lines:
            raise CheckError(f"/metrics has GPU series without a GPU: {lines[:5]}")
        self.say(f"  /metrics GPU series: {len(lines)} " + "; ".join(lines[:8]))
        named = [x.strip() for x in proc.log_path.read_text(errors="replace").splitlines()
                 if "CUDA_VISIBLE_DEVICES=" in x]
        if not named:
            raise CheckError("the startup log names no worker's GPU")
        self.say(f"  startup log: {named[0][-90:]}")

    # ------------------------------------------------------------ load

    def point(self, config: Config, proc: Proc, url: str, clients: int) -> Point:
        base = url.rsplit("/", 1)[0]
        batches = loadgen.batch_totals(base)
        before = _cpu_by_process(proc.pid)
        body, headers = self.request_body(config)
        with self.sampler.sample(lambda: set(proc.tree())) as sampling:
            r = loadgen.wrk(self.wrk, url, connections=clients, seconds=self.seconds,
                            body=body, headers=headers, timeout_s=60)
        after = _cpu_by_process(proc.pid)
        mean_batch = loadgen.mean_batch(batches, loadgen.batch_totals(base))
        window: Window = sampling.window
        ok = max(1, r.ok)
        by_process = {name: (after[name] - before.get(name, 0.0)) / ok * 1e3
                      for name in after}
        parent = by_process.pop("parent", 0.0)
        workers = [mib for pid, mib in window.process_mib.items()]
        point = Point(config.system, config.workers, clients, r.ok_per_s, r.p50_ms, r.p99_ms,
                      r.non_2xx, r.socket_errors, window.util_mean, window.util_max,
                      window.memory_max_mib, sorted(workers), parent,
                      sum(by_process.values()), by_process, mean_batch, config.body)
        util = "n/a" if point.gpu_util_mean is None else f"{point.gpu_util_mean:.0f}%"
        self.say(f"  {clients:>3} clients: {point.ok_per_s:8.1f} ok/s  p50 {r.p50_ms:7.1f} ms"
                 f"  p99 {r.p99_ms:7.1f} ms  non-2xx {r.non_2xx}  GPU {util}  CPU/req "
                 f"parent {parent:.2f} ms, others {point.other_cpu_ms:.2f} ms"
                 + ("" if mean_batch is None else f"  mean batch {mean_batch:.1f}"))
        return point

    def serve(self, config: Config, first_cogserve: bool) -> None:
        proc, url = self.start(config)
        try:
            self.answer_check(config, url)
            if first_cogserve:
                self.metrics_check(url.rsplit("/", 1)[0], proc)
            body, headers = self.request_body(config)
            loadgen.wrk(self.wrk, url, connections=max(config.clients), seconds=self.warmup,
                        body=body, headers=headers, timeout_s=60)
            for clients in config.clients:
                self.points.append(self.point(config, proc, url, clients))
                self.write()
        finally:
            proc.stop()

    def predict_check(self) -> None:
        """`cogserve predict` on the same image: a one-off CUDA prediction, checked."""
        binary = self.venvs["cogserve"] / "bin" / "cogserve"
        start = time.perf_counter()
        done = subprocess.run([str(binary), "predict", str(MODEL), "-i",
                               f"image=@{self.image}"], capture_output=True, text=True,
                              env={**os.environ, **self.env}, cwd=MODEL, timeout=600)
        if done.returncode != 0:
            raise CheckError(f"cogserve predict exited {done.returncode}: "
                             f"{done.stderr[-1500:]}")
        top = check_top5(json.loads(done.stdout), "cogserve predict")
        agree = "matches" if top[0] == self.top1 else f"differs from {self.top1}"
        self.say(f"cogserve predict: top-5 {top} in {time.perf_counter() - start:.1f} s "
                 f"(top class {agree} in process)")

    # ------------------------------------------------------------ output

    def write(self) -> None:
        data = {"facts": self.facts, "points": [asdict(p) for p in self.points]}
        (self.out / "gpu-results.json").write_text(json.dumps(data, indent=1))
        table = render(self.points, self.facts)
        (self.out / "gpu-results.md").write_text(table)
        (self.out / "RESULTS-snippet.md").write_text(snippet(table, self.facts))


def _cpu_by_process(root: int) -> dict[str, float]:
    """CPU seconds so far of a server ("parent") and each descendant, named by command."""
    out = {"parent": cpu_seconds(root)}
    for pid in descendants(root):
        name = f"{pid} {command_line(pid)[-60:]}"
        out[name] = cpu_seconds(pid)
    return out


def _fmt(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def render(points: list[Point], facts: dict[str, Any]) -> str:
    head = ("| system | image sent as | workers | clients | successful req/s | p50 ms | "
            "p99 ms | non-2xx | GPU util mean (max) % | GPU MiB | GPU MiB per worker | "
            "CPU ms/req parent | CPU ms/req other processes | mean batch |\n"
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|\n")
    rows = []
    for p in points:
        util = "n/a" if p.gpu_util_mean is None else \
            f"{p.gpu_util_mean:.0f} ({_fmt(p.gpu_util_max)})"
        per_worker = ", ".join(f"{m:,.0f}" for m in p.worker_gpu_mib) or "n/a"
        rows.append(f"| {p.system} | {p.body} | {p.workers} | {p.clients} | {p.ok_per_s:,.0f} | "
                    f"{p.p50_ms:.1f} | {p.p99_ms:.1f} | {p.non_2xx + p.socket_errors} | {util} | "
                    f"{_fmt(p.gpu_memory_mib)} | {per_worker} | {p.parent_cpu_ms:.2f} | "
                    f"{p.other_cpu_ms:.2f} | {_fmt(p.mean_batch, 1)} |")
    ceiling = facts.get("ceiling") or {}
    lines = [f"- {k}: {v:,.1f}" if isinstance(v, float) else f"- {k}: {v}"
             for k, v in ceiling.items()]
    return (head + "\n".join(rows) + "\n\nThe model in process, images/s (no server):\n\n"
            + "\n".join(lines) + "\n")


def snippet(table: str, facts: dict[str, Any]) -> str:
    smoke = bool(facts.get("smoke"))
    kind = "CPU smoke run (not GPU figures)" if smoke else str(facts.get("gpu") or "no GPU")
    model = "a numpy stand-in for the network (bench/models/gpu_resnet/net.py)" \
        if facts.get("standin") else "torchvision resnet50, random weights" + (
            ", fp32 on the CPU" if smoke else ", fp16 + channels_last")
    commit = str(facts.get("cogserve_commit") or "?")
    commit = commit[:10] + commit[40:]  # a short hash, and " with uncommitted changes"
    form = facts.get("multipart_body_bytes")
    form = "" if form is None else (
        f" or, where the table says multipart, as a multipart/form-data upload of one file "
        f"part ({form} byte body)")
    return (f"## GPU scenario: {kind}\n\n"
            f"{facts.get('machine', '')}; {model}; each request one "
            f"{facts.get('image_bytes', '?')} byte 224x224 JPEG to a `Path` input, as a data "
            f"URL ({facts.get('body_bytes', '?')} byte JSON body){form}, top-5 out; wrk "
            f"closed loop, {facts.get('seconds')} s per point, one server at a time; "
            f"`bench/gpu/run` at cogserve {commit}.\n\n" + table)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--venvs", type=pathlib.Path, required=True)
    parser.add_argument("--wrk", type=pathlib.Path, required=True)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--warmup", type=float, default=None)
    parser.add_argument("--workers", type=int, nargs="*", default=None)
    parser.add_argument("--systems", nargs="*", default=None)
    parser.add_argument("--commit", default="")
    parser.add_argument("--budget", type=float, default=480.0,
                        help="seconds: no server is started past this, minus a margin")
    args = parser.parse_args()
    run = Run(args)
    plan = configs(run.smoke, args.workers, args.systems)
    names = run.sampler.names() if run.sampler.available else []
    run.facts.update(gpu=names[0] if names else None, cogserve_commit=args.commit,
                     machine=f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
                             f"GPU: {names[0] if names else 'none'}")
    run.say(f"GPU scenario{' (smoke)' if run.smoke else ''}: {run.facts['machine']}; NVML: "
            f"{'GPU 0 sampled' if run.sampler.available else run.sampler.reason}; "
            f"{len(plan)} servers, {sum(len(c.clients) for c in plan)} points of "
            f"{run.seconds:g} s")
    failures = 0
    started = time.monotonic()
    try:
        run.make_inputs()
        run.ceiling()
        run.predict_check()
        run.write()
        first = True
        for config in plan:
            left = args.budget - (time.monotonic() - started)
            # a start (a minute at most), the warm-up, each point and its reads
            if left < 60 + run.warmup + len(config.clients) * (run.seconds + 2):
                run.say(f"SKIPPED {config.name} x{config.workers}: {left:.0f} s of the "
                        "budget left (run it alone with --workers / --systems)")
                failures += 1
                continue
            try:
                run.serve(config, first and config.system in (BATCHED, PLAIN))
                first = first and config.system not in (BATCHED, PLAIN)
            except (CheckError, loadgen.LoadError, RuntimeError) as exc:
                failures += 1
                run.say(f"FAILED {config.name} x{config.workers}: {exc}")
    except (CheckError, loadgen.LoadError) as exc:
        failures += 1
        run.say(f"FAILED: {exc}")
    run.write()
    run.say(f"done: {len(run.points)} points, {failures} failure(s); table in "
            f"{run.out / 'gpu-results.md'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
