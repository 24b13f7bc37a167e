"""Cog's integration scripts (`integration-tests/tests/*.txtar`), run against cogserve.

A script is a testscript file (github.com/rogpeppe/go-internal/testscript, as Cog's
`integration-tests/harness` extends it): commands, one a line, then the model's files as
a txtar archive. This module reads one, writes its files to a fresh folder and runs its
commands as Cog's harness does, with `cog` played by cogserve:

- `cog build` checks the model as `cogserve schema` does (there is no image to build);
  `docker inspect IMAGE --format '{{index .Config.Labels "run.cog.openapi_schema"}}'`,
  the schema a build stores, prints `cogserve schema`'s document as Go writes the label
  (compact, keys sorted);
- `cog predict [IMAGE] ...` and `cog train` are `cogserve predict` / `train`;
- `cog serve [flags]` starts `cogserve serve` on a free port in the background, waits
  until `/health-check` says it is ready (or failed), and sets `$SERVER_URL`;
- `curl [-H k:v]... METHOD PATH [BODY]`, `webhook-server-start` / `-wait`,
  `upload-server-start` / `-count`, `wait-for`, `server-stop` as Cog's harness defines
  them (`harness/harness.go`): curl retries 10 times, 500 ms apart, until the status is
  2xx (or, negated, is not);
- testscript's own `exec`, `stdout`, `stderr`, `exists`, `grep`, `env`, `cd`, `cp`,
  `mkdir`, `rm`, `stdin`, `skip`, `stop`, and `[condition]` prefixes.

Every process gets only what Cog's harness gives `cog serve`: HOME, PATH, the COG_*
variables it propagates and those a script sets; never SSL_CERT_FILE and friends. A
command that needs Docker or a part of the `cog` CLI that is not the runtime (`cog run`,
`cog exec`, `cog doctor`, `cog weights`, `cog push`, registries, a terminal) makes the
script not applicable, with the reason.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from harness import free_port  # one registry of the run's ports, shared by xdist's workers


class Verdict(enum.StrEnum):
    PASS = "pass"
    FAIL = "fail"
    NOT_APPLICABLE = "n/a"


@dataclasses.dataclass
class Outcome:
    verdict: Verdict
    reason: str = ""
    log: str = ""


# Commands (and `cog` subcommands) that are not cogserve's to play, and why.
NOT_THE_RUNTIME = {
    "cog exec": "`cog exec` runs a command inside the Docker image",
    "cog doctor": "`cog doctor` is the cog CLI's project checker",
    "cog weights": "`cog weights` is the cog CLI's managed-weights tooling",
    "cog push": "`cog push` pushes an image to a registry",
    "cog init": "`cog init` is the cog CLI's project template",
    "cog debug": "`cog debug` prints the Dockerfile",
    "cog login": "`cog login` is the cog CLI's registry login",
    "docker-run": "runs the Docker image",
    "docker-push": "pushes to a Docker registry",
    "registry-start": "needs a Docker registry",
    "registry-seed": "needs a Docker registry",
    "registry-inspect": "inspects a Docker registry",
    "pty-run": "drives the cog CLI through a terminal inside the image",
    "exec docker": "runs Docker",
    "exec go": "builds a Go helper from Cog's repository",
}

# Scripts a reader judged not applicable where no command gives it away.
JUDGED = {
    "build_openapi_schema": "compares the schema label with the image's run.cog.version "
                            "label by running docker from a Python helper",
    "build_torch_version_required": "checks Cog's CUDA choice for an unpinned torch in a GPU "
                                    "image",
    "predict_existing_image": "runs a built image from another folder (cogserve has no "
                              "images: a model is its folder)",
    "predict_deprecation_warning": "asserts the cog CLI's own notice that `cog predict` is "
                                   "deprecated",
    "train_deprecated": "asserts the cog CLI's own notice that `cog train` is deprecated",
    "predict_legacy_predictor": "asserts the cog CLI's own notice for `predict:` in cog.yaml",
    "run_legacy_predictor": "asserts the cog CLI's own notice for `predict:` in cog.yaml",
    "run_legacy_async_predictor": "asserts the cog CLI's own notice for `predict:` in "
                                  "cog.yaml",
    "setup_worker_tracing_logs": "asserts coglet's internal log lines (its Rust tracing of "
                                 "the worker spawn) in setup.logs",
    "static_schema_unresolvable_fails": "asserts a limit of Cog's static schema parser (an "
                                        "import from a package's __init__ it cannot "
                                        "resolve); cogserve imports the model and serves it",
    "zsh_package": "asserts that `cog build` installed a Debian package into the image "
                   "(cogserve checks build.system_packages and prints the apt-get command; "
                   "`cogserve env --install-system-packages` runs it)",
}

# Scripts that fail against cogserve today, and why (none at the commit in cog_scripts/README.md;
# a name here is an expected failure, strict: it fails the test the day it passes).
EXPECTED_FAILURES: dict[str, str] = {}

SCHEMA_LABEL = "run.cog.openapi_schema"
# The host as a container sees it, in the harness's webhook and upload URLs (and so in the
# outputs scripts match); without a container the host is 127.0.0.1, in URLs and patterns.
DOCKER_HOST = "host.docker.internal"
# `cog build` options that only shape a Docker image.
IMAGE_BUILD_OPTIONS = ("--use-cog-base-image", "--separate-weights", "--secret",
                       "--dockerfile", "--progress")
# What Cog's harness passes to the server (harness.go: cmdCogServe, propagatedEnvVars).
PASSED_ON = ("HOME", "PATH", "REPO_ROOT", "COG_NO_UPDATE_CHECK", "TEST_IMAGE",
             "COG_SDK_WHEEL", "COGLET_WHEEL", "COG_CACHE_DIR", "COG_MODEL_REGISTRY",
             "RUST_LOG", "COG_CA_CERT", "BUILDKIT_PROGRESS", "COG_REGISTRY_HOST")


class ScriptFailed(Exception):
    pass


class Skipped(Exception):
    pass


class Stopped(Exception):
    pass


def parse_txtar(text: str) -> tuple[str, dict[str, str]]:
    """The script (the comment section) and the files of a txtar archive."""
    files: dict[str, str] = {}
    marker = re.compile(r"^-- (.+?) --$", re.M)
    parts = marker.split(text)
    script = parts[0]
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        files[name.strip()] = body[1:] if body.startswith("\n") else body
    return script, files


def split_words(line: str, getenv: Callable[[str], str]) -> list[str]:
    """testscript's words: spaces separate, single quotes keep text as it is ('' is a
    quote), $VAR and ${VAR} expand outside quotes, # at a word's start ends the line."""
    words: list[str] = []
    word: list[str] = []
    started = False
    i = 0
    while i < len(line):
        c = line[i]
        if c == "'":
            end = i + 1
            while True:
                end = line.find("'", end)
                if end < 0:
                    raise ScriptFailed(f"unterminated quote in: {line}")
                if line[end + 1:end + 2] == "'":
                    end += 2
                    continue
                break
            word.append(line[i + 1:end].replace("''", "'"))
            started = True
            i = end + 1
        elif c in " \t":
            if started:
                words.append("".join(word))
                word, started = [], False
            i += 1
        elif c == "#" and not started:
            break
        elif c == "$":
            match = re.match(r"\$(?:\{(\w+)\}|(\w+))", line[i:])
            if match:
                word.append(getenv(match.group(1) or match.group(2)))
                i += match.end()
            else:
                word.append(c)
                i += 1
            started = True
        else:
            word.append(c)
            started = True
            i += 1
    if started:
        words.append("".join(word))
    return words


def expand(text: str, getenv: Callable[[str], str]) -> str:
    """Go's os.Expand, as the harness applies it to cog and curl arguments."""
    return re.sub(r"\$(?:\{(\w+)\}|(\w+))", lambda m: getenv(m.group(1) or m.group(2)), text)


def _conditions(names: str, short: bool) -> bool:
    known = {"short": short, "linux": sys.platform == "linux",
             "amd64": os.uname().machine in ("x86_64", "amd64"), "darwin": False,
             "windows": False}
    known["linux_amd64"] = known["linux"] and known["amd64"]
    result = True
    for raw in names.split(","):
        name = raw.strip()
        negate = name.startswith("!")
        name = name.lstrip("!")
        if name.startswith("exec:"):
            value = shutil.which(name[5:]) is not None
        else:
            value = known.get(name, False)
        result = result and (value != negate)
    return result


def not_applicable(script: str) -> str | None:
    """Why a script cannot be run against cogserve at all, or None."""
    for raw in script.splitlines():
        line = re.sub(r"^\s*(\[[^\]]*\]\s*)*[!?]?\s*", "", raw)
        if not line or line.startswith("#"):
            continue
        if "docker inspect" in line and SCHEMA_LABEL in line:
            continue  # the schema a build stores: cogserve schema
        words = line.split()
        if words[:2] == ["cog", "build"]:
            image_only = [w.split("=")[0] for w in words if w.startswith(IMAGE_BUILD_OPTIONS)]
            if image_only:
                return f"`cog build {image_only[0]}` shapes the Docker image"
        for key in (" ".join(words[:2]), words[0]):
            if key in NOT_THE_RUNTIME:
                return NOT_THE_RUNTIME[key]
        if "$REPO_ROOT" in line:
            return "reads files from a checkout of Cog's repository ($REPO_ROOT)"
    return None


class _Webhooks:
    """harness.go's webhook receiver: the first terminal prediction it is sent."""

    def __init__(self) -> None:
        self.result: dict[str, Any] | None = None
        self.done = threading.Event()
        hooks = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                self.send_response(200)
                self.end_headers()
                payload = json.loads(body or b"{}")
                if payload.get("status") not in ("succeeded", "failed", "canceled"):
                    return
                if hooks.result is None:
                    output = payload.get("output")
                    size = (len(output) if isinstance(output, str)
                            else len(json.dumps(output, separators=(",", ":"))))
                    result: dict[str, Any] = {"status": payload["status"],
                                              "output_size": size,
                                              "has_error": bool(payload.get("error"))}
                    if payload.get("error"):
                        result["error_message"] = payload["error"]
                    if payload.get("metrics") is not None:
                        result["metrics"] = payload["metrics"]
                    hooks.result = result
                    hooks.done.set()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Uploads:
    """harness.go's upload server: counts PUTs, answers 200 with a Location."""

    def __init__(self) -> None:
        self.count = 0
        uploads = self

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("content-length", "0")))
                uploads.count += 1
                port = uploads.server.server_address[1]
                self.send_response(200)
                self.send_header("Location", f"http://127.0.0.1:{port}{self.path}")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Run:
    """One script's execution: its folder, variables, last output and servers."""

    def __init__(self, work: pathlib.Path, cogserve: list[str], base_env: dict[str, str],
                 short: bool) -> None:
        self.work = work
        self.cwd = work
        self.cogserve = cogserve
        self.short = short
        self.env = dict(base_env)
        self.env.update({"WORK": str(work), "TEST_IMAGE": f"cog-test-{os.getpid()}",
                         "COG_NO_UPDATE_CHECK": "1"})
        self.stdout = ""
        self.stderr = ""
        self.stdin: str | None = None
        self.server: subprocess.Popen[bytes] | None = None
        self.server_log = work.parent / f"{work.name}.server.log"
        self.webhooks: _Webhooks | None = None
        self.uploads: _Uploads | None = None
        self.log: list[str] = []

    def getenv(self, name: str) -> str:
        return self.env.get(name, "")

    # ------------------------------------------------------------------ running

    def run(self, script: str) -> None:
        for number, raw in enumerate(script.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            conditions = re.match(r"^((?:\[[^\]]*\]\s*)+)(.*)$", line)
            if conditions:
                wanted = re.findall(r"\[([^\]]*)\]", conditions.group(1))
                if not all(_conditions(c, self.short) for c in wanted):
                    continue
                line = conditions.group(2)
            negate = line.startswith("!")
            maybe = line.startswith("?")
            line = line.lstrip("!?").strip()
            words = split_words(line, self.getenv)
            if not words:
                continue
            self.log.append(f"> {raw.strip()}")
            try:
                self.command(words, negate, maybe)
            except ScriptFailed as exc:
                raise ScriptFailed(f"line {number}: {raw.strip()}\n{exc}") from None

    def command(self, words: list[str], negate: bool, maybe: bool) -> None:
        name, args = words[0], words[1:]
        handler = getattr(self, "cmd_" + name.replace("-", "_"), None)
        if handler is None:
            raise ScriptFailed(f"unknown command {name!r}")
        handler(args, negate, maybe)

    def _exec(self, argv: list[str], negate: bool, maybe: bool, timeout: float = 300,
              extra_env: dict[str, str] | None = None) -> None:
        stdin = self.stdin
        self.stdin = None
        process = subprocess.Popen(argv, cwd=self.cwd, env={**self.env, **(extra_env or {})},
                                   stdin=subprocess.PIPE if stdin is not None
                                   else subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = process.communicate(stdin.encode() if stdin is not None else None,
                                           timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ScriptFailed(f"{argv[0]} did not finish in {timeout:.0f} s") from None
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.stdout = out.decode(errors="replace")
        self.stderr = err.decode(errors="replace")
        self.log.append(f"[exit {process.returncode}]\n[stdout]\n{self.stdout}\n"
                        f"[stderr]\n{self.stderr}")
        self._expect(process.returncode == 0, negate, maybe, f"{' '.join(argv[:3])} exited "
                     f"{process.returncode}: {self.stderr[-2000:]}")

    @staticmethod
    def _expect(ok: bool, negate: bool, maybe: bool, what: str) -> None:
        if maybe:
            return
        if negate and ok:
            raise ScriptFailed(f"succeeded unexpectedly\n{what}")
        if not negate and not ok:
            raise ScriptFailed(what)

    # ------------------------------------------------------------------ cog

    def cmd_cog(self, args: list[str], negate: bool, maybe: bool) -> None:
        args = [expand(a, self.getenv) for a in args]
        if not args:
            raise ScriptFailed("cog: no subcommand")
        sub, rest = args[0], args[1:]
        if sub == "serve":
            self._serve(rest, negate)
            return
        if sub == "build":
            rest = _drop_options(rest, {"-t", "--tag"}, {"--no-cache"})
            self._exec([*self.cogserve, "schema", *rest], negate, maybe)
            self.stdout = ""  # a build prints no schema
            return
        if sub in ("predict", "run", "train"):  # `cog run` is 0.23's name for predict
            if rest and rest[0] == self.getenv("TEST_IMAGE") or (
                    rest and rest[0].startswith(self.getenv("TEST_IMAGE") + "-")):
                rest = rest[1:]
            extra = {}
            while "-e" in rest:  # -e KEY=VALUE: the container's environment
                at = rest.index("-e")
                key, _, value = rest[at + 1].partition("=")
                extra[key] = value
                del rest[at:at + 2]
            self._exec([*self.cogserve, "train" if sub == "train" else "predict", *rest],
                       negate, maybe, extra_env=extra)
            return
        raise ScriptFailed(f"cog {sub}: not played by cogserve")

    def _serve(self, args: list[str], negate: bool) -> None:
        if self.server is not None:
            raise ScriptFailed("server already running")
        port = free_port()
        log = open(self.server_log, "wb")  # noqa: SIM115 - kept for the server's life
        self.server = subprocess.Popen(
            [*self.cogserve, "serve", "-p", str(port), *args], cwd=self.cwd,
            env=self.env, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        url = f"http://127.0.0.1:{port}"
        self.env["SERVER_URL"] = url
        healthy = self._wait_healthy(url, 120)
        self.stdout = ""
        self.stderr = self.server_log.read_text(errors="replace")
        if negate and healthy:
            raise ScriptFailed("server became healthy, but expected setup failure")
        if not negate and not healthy:
            raise ScriptFailed(f"server did not become healthy:\n{self.stderr[-3000:]}")

    def _wait_healthy(self, url: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.server is not None
            if self.server.poll() is not None:
                return False
            try:
                status = httpx.get(url + "/health-check", timeout=5).json().get("status")
            except (httpx.HTTPError, ValueError):
                status = None
            if status in ("READY", "UNHEALTHY", "BUSY"):
                return True
            if status in ("SETUP_FAILED", "DEFUNCT"):
                return False
            time.sleep(0.2)
        return False

    def cmd_server_stop(self, args: list[str], negate: bool, maybe: bool) -> None:
        self.stop_server()

    def stop_server(self) -> None:
        if self.server is None:
            return
        server, self.server = self.server, None
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        try:
            os.killpg(server.pid, signal.SIGKILL)  # anything the server left in its group
        except ProcessLookupError:
            pass

    def cmd_curl(self, args: list[str], negate: bool, maybe: bool) -> None:
        headers = {}
        while len(args) >= 2 and args[0] == "-H":
            key, _, value = args[1].partition(":")
            headers[key.strip()] = value.strip()
            args = args[2:]
        url = self.getenv("SERVER_URL")
        if len(args) < 2 or not url:
            raise ScriptFailed("curl: usage: curl [-H k:v]... METHOD PATH [BODY], after cog serve")
        method, path = args[0], args[1]
        body = expand(args[2], self.getenv) if len(args) > 2 else ""
        if body.startswith("@"):
            body = (self.cwd / body[1:]).read_text()
        if body:
            headers.setdefault("Content-Type", "application/json")
        status, text = 0, ""
        for attempt in range(10):
            try:
                response = httpx.request(method, url + path, content=body.encode(),
                                         headers=headers, timeout=10)
            except httpx.HTTPError as exc:
                text = str(exc)
            else:
                status, text = response.status_code, response.text
                ok = 200 <= status < 300
                if ok and not negate:
                    self.stdout, self.stderr = text, ""
                    self.log.append(f"[{status}] {text[:2000]}")
                    return
                if not ok and negate:
                    self.stdout, self.stderr = "", text
                    self.log.append(f"[{status}] {text[:2000]}")
                    return
            if attempt < 9:
                time.sleep(0.5)
        self.log.append(f"[{status}] {text[:2000]}")
        if maybe:
            return
        raise ScriptFailed(f"curl {method} {path}: status {status} after 10 attempts: "
                           f"{text[:500]}")

    def cmd_webhook_server_start(self, args: list[str], negate: bool, maybe: bool) -> None:
        self.webhooks = _Webhooks()
        self.env["WEBHOOK_URL"] = \
            f"http://127.0.0.1:{self.webhooks.server.server_address[1]}/webhook"

    def cmd_webhook_server_wait(self, args: list[str], negate: bool, maybe: bool) -> None:
        if self.webhooks is None:
            raise ScriptFailed("webhook-server-wait: no webhook server")
        timeout = _duration(args[0]) if args else 120.0
        if not self.webhooks.done.wait(timeout):
            raise ScriptFailed(f"webhook-server-wait: no terminal webhook in {timeout:g} s")
        self.stdout = json.dumps(self.webhooks.result, separators=(",", ":")) + "\n"
        self.log.append(self.stdout)

    def cmd_upload_server_start(self, args: list[str], negate: bool, maybe: bool) -> None:
        self.uploads = _Uploads()
        self.env["UPLOAD_SERVER_URL"] = \
            f"http://127.0.0.1:{self.uploads.server.server_address[1]}/"

    def cmd_upload_server_count(self, args: list[str], negate: bool, maybe: bool) -> None:
        if self.uploads is None:
            raise ScriptFailed("upload-server-count: no upload server")
        self._expect(self.uploads.count == int(args[0]), negate, maybe,
                     f"expected {args[0]} uploads, got {self.uploads.count}")

    def cmd_wait_for(self, args: list[str], negate: bool, maybe: bool) -> None:
        kind, target = args[0], args[1]
        timeout = 30.0
        if len(args) > 2:
            try:
                timeout = _duration(args[-1])
            except ValueError:
                pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            path = self.work / target
            if (kind == "file" and path.exists()) or (
                    kind == "not-empty" and path.is_file() and path.stat().st_size > 0):
                return
            if kind == "http":
                want = int(args[2]) if len(args) > 3 else 200
                try:
                    if httpx.get(target, timeout=5).status_code == want:
                        return
                except httpx.HTTPError:
                    pass
            time.sleep(0.1)
        raise ScriptFailed(f"wait-for {kind} {target}: not within {timeout:g} s")

    # ------------------------------------------------------------------ testscript's own

    def cmd_exec(self, args: list[str], negate: bool, maybe: bool) -> None:
        if args and args[0] == "docker" and SCHEMA_LABEL in " ".join(args):
            self._exec([*self.cogserve, "schema"], negate, maybe)
            if self.stdout.strip():
                # as Go writes the label: compact, keys in order (a map's keys are sorted)
                self.stdout = json.dumps(json.loads(self.stdout), separators=(",", ":"),
                                         sort_keys=True) + "\n"
            return
        if args and args[-1] == "&":
            raise ScriptFailed("background exec is not supported")
        self._exec(args, negate, maybe)

    def cmd_stdout(self, args: list[str], negate: bool, maybe: bool) -> None:
        self._match("stdout", self.stdout, args, negate)

    def cmd_stderr(self, args: list[str], negate: bool, maybe: bool) -> None:
        self._match("stderr", self.stderr, args, negate)

    def _match(self, name: str, text: str, args: list[str], negate: bool) -> None:
        count = None
        if len(args) > 1 and re.fullmatch(r"-count=\d+", args[0]):
            count = int(args[0].split("=", 1)[1])
            args = args[1:]
        if len(args) != 1:
            raise ScriptFailed(f"{name}: usage: {name} [-count=N] PATTERN")
        pattern = re.compile(_go_regex(args[0].replace(DOCKER_HOST, "127.0.0.1")), re.M)
        found = len(pattern.findall(text))
        if negate:
            if found:
                raise ScriptFailed(f"unexpected match for {args[0]!r} in {name}:\n"
                                   f"{text[-3000:]}")
        elif (count is None and not found) or (count is not None and found != count):
            raise ScriptFailed(f"no match for {args[0]!r} in {name}"
                               + (f" ({found} of {count})" if count is not None else "")
                               + f":\n{text[-3000:]}")

    def cmd_grep(self, args: list[str], negate: bool, maybe: bool) -> None:
        path = self.cwd / args[-1]
        self._match(str(path), path.read_text(errors="replace"), args[:-1], negate)

    def cmd_exists(self, args: list[str], negate: bool, maybe: bool) -> None:
        for name in (a for a in args if not a.startswith("-")):
            self._expect((self.cwd / name).exists(), negate, maybe, f"{name} does not exist")

    def cmd_mkdir(self, args: list[str], negate: bool, maybe: bool) -> None:
        for name in args:
            (self.cwd / name).mkdir(parents=True, exist_ok=True)

    def cmd_rm(self, args: list[str], negate: bool, maybe: bool) -> None:
        for name in args:
            path = self.cwd / name
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)

    def cmd_cp(self, args: list[str], negate: bool, maybe: bool) -> None:
        *sources, target = args
        for source in sources:
            data = {"stdout": self.stdout.encode(), "stderr": self.stderr.encode()}.get(
                source)
            dest = self.cwd / target
            if dest.is_dir():
                dest = dest / pathlib.Path(source).name
            if data is None:
                shutil.copy(self.cwd / source, dest)
            else:
                dest.write_bytes(data)

    def cmd_cd(self, args: list[str], negate: bool, maybe: bool) -> None:
        self.cwd = (self.cwd / args[0]).resolve()

    def cmd_env(self, args: list[str], negate: bool, maybe: bool) -> None:
        for arg in args:
            key, sep, value = arg.partition("=")
            if sep:
                self.env[key] = value
            else:
                self.stdout = f"{key}={self.getenv(key)}\n"

    def cmd_stdin(self, args: list[str], negate: bool, maybe: bool) -> None:
        self.stdin = (self.cwd / args[0]).read_text()

    def cmd_skip(self, args: list[str], negate: bool, maybe: bool) -> None:
        raise Skipped(" ".join(args))

    def cmd_stop(self, args: list[str], negate: bool, maybe: bool) -> None:
        raise Stopped(" ".join(args))

    def close(self) -> None:
        self.stop_server()
        for helper in (self.webhooks, self.uploads):
            if helper is not None:
                helper.close()


def _drop_options(args: list[str], with_value: set[str], flags: set[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in with_value:
            skip = True
        elif arg.split("=", 1)[0] in with_value or arg in flags:
            pass
        else:
            out.append(arg)
    return out


def _go_regex(pattern: str) -> str:
    """RE2 to Python: \\z is \\Z; the rest of what the scripts use is shared."""
    return pattern.replace(r"\z", r"\Z")


def _duration(text: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)", text)
    if not match:
        raise ValueError(text)
    return float(match.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0}[match.group(2)]


def _cuda_image(files: dict[str, str]) -> str | None:
    """A GPU image with a CUDA framework: what the script checks is Cog's choice of CUDA
    base image and framework wheels (gigabytes), which cogserve has no part in."""
    if not re.search(r"^\s*gpu:\s*true", files.get("cog.yaml", ""), re.M):
        return None
    packages = files.get("cog.yaml", "") + files.get("requirements.txt", "")
    if re.search(r"^\s*-?\s*[\"']?(torch|tensorflow)\b", packages, re.M):
        return "a GPU image with CUDA framework wheels: Cog's CUDA base image choice"
    return None


def why_not_applicable(path: pathlib.Path) -> str | None:
    """Why a script is not cogserve's to run (decided from its text), or None."""
    script, files = parse_txtar(path.read_text())
    return JUDGED.get(path.stem) or not_applicable(script) or _cuda_image(files)


def run_script(path: pathlib.Path, work: pathlib.Path, *, cogserve: list[str] | None = None,
               env: dict[str, str] | None = None, short: bool = False) -> Outcome:
    """Run one script in `work` (created; left for inspection) and say how it went."""
    script, files = parse_txtar(path.read_text())
    why = why_not_applicable(path)
    if why:
        return Outcome(Verdict.NOT_APPLICABLE, why)
    work.mkdir(parents=True)
    for name, body in files.items():
        target = work / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body)
    base = {k: v for k, v in (env if env is not None else os.environ).items()
            if k in PASSED_ON or k.startswith("COGSERVE_") or k == "TMPDIR"}
    run = Run(work, cogserve or [sys.executable, "-m", "cogserve.cli"], base, short)
    try:
        run.run(script)
    except Skipped as exc:
        return Outcome(Verdict.NOT_APPLICABLE, f"skipped by the script: {exc}",
                       "\n".join(run.log))
    except Stopped:
        pass
    except ScriptFailed as exc:
        return Outcome(Verdict.FAIL, str(exc), "\n".join(run.log))
    finally:
        run.close()
    return Outcome(Verdict.PASS, "", "\n".join(run.log))


def main() -> None:
    """`python tests/cogscript.py [--results RESULTS.md] SCRIPT.txtar...`: run scripts, print
    one verdict each (and write them as a table, with why for each that did not pass)."""
    import argparse
    import tempfile

    parser = argparse.ArgumentParser()
    parser.add_argument("--results", type=pathlib.Path)
    parser.add_argument("scripts", nargs="+", type=pathlib.Path)
    args = parser.parse_args()
    root = pathlib.Path(tempfile.mkdtemp(prefix="cogscripts-"))
    rows = []
    for path in args.scripts:
        started = time.monotonic()
        outcome = run_script(path, root / path.stem)
        first = outcome.reason.splitlines()[0] if outcome.reason else ""
        if outcome.verdict is Verdict.FAIL:
            first = EXPECTED_FAILURES.get(path.stem, first)
        rows.append((path.stem, outcome.verdict, first))
        print(f"{path.stem}\t{outcome.verdict}\t{time.monotonic() - started:.1f}s\t{first}",
              flush=True)
        if outcome.verdict is Verdict.FAIL and os.environ.get("COGSCRIPT_VERBOSE"):
            print(shlex.quote(outcome.reason[:3000]), outcome.log[-4000:], sep="\n")
    if args.results:
        counts = {v: sum(1 for r in rows if r[1] is v) for v in Verdict}
        lines = [f"{len(rows)} scripts: " + ", ".join(f"{n} {v}" for v, n in counts.items()),
                 "", "| script | verdict | why |", "|---|---|---|"]
        lines += [f"| {name} | {verdict} | {why.replace('|', '/')} |"
                  for name, verdict, why in rows]
        args.results.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
