"""The reference server, Cog 0.23.1 with coglet 0.23.1 from PyPI, for differential tests.

Its venv is built once with uv under `.cache/` in the checkout (gitignored) and reused
while its package list is unchanged (a marker file records the list it was built from).
The reference validates inputs only against `.cog/openapi_schema.json` in the model
folder, which Cog's build step writes; it has no schema generator of its own. So each
model is copied to a scratch folder and given the schema `cogserve schema` derives,
which makes both servers judge inputs by the same document.
"""

from __future__ import annotations

import fcntl
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import httpx
from harness import free_port

from cogserve.envs import certs

REPO = pathlib.Path(__file__).resolve().parents[1]
VENV = REPO / ".cache" / "reference-venv"
PACKAGES = ("cog==0.23.1", "coglet==0.23.1")
# what uv prints when it cannot reach the package index (no network, DNS, TLS)
_UNREACHABLE = re.compile(r"Failed to fetch|error sending request|dns error|tcp connect error|"
                          r"Could not connect|Network is unreachable|client error \(Connect\)")


class Unreachable(Exception):
    """The package index could not be reached: the reference cannot be installed here."""


def venv() -> pathlib.Path:
    """The reference's venv, built on first use (one builder at a time: a file lock)."""
    VENV.parent.mkdir(parents=True, exist_ok=True)
    wanted = "\n".join(PACKAGES)
    marker = VENV / ".installed"
    with open(VENV.parent / ".reference-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists() and marker.read_text() == wanted:
            return VENV
        import uv

        binary = uv.find_uv_bin()
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
        env["UV_PYTHON_DOWNLOADS"] = "never"
        with certs.for_build() as trust:  # what pip trusts, as cogserve's own builds do
            env.update(trust.env)
            for argv in ([binary, "venv", "-q", "--clear", "-p", sys.executable, str(VENV)],
                         [binary, "pip", "install", "-q", "-p", str(VENV / "bin" / "python"),
                          *PACKAGES]):
                done = subprocess.run(argv, capture_output=True, text=True, env=env,
                                      stdin=subprocess.DEVNULL, timeout=600)
                if done.returncode != 0:
                    message = f"{' '.join(argv[1:3])} failed:\n{done.stdout}{done.stderr}"
                    if _UNREACHABLE.search(done.stderr):
                        raise Unreachable(message)
                    raise RuntimeError(message)
        marker.write_text(wanted)
        return VENV


def entry(model: pathlib.Path, keys: str) -> str:
    """The `predict:`/`run:` (or `train:`) entry of cog.yaml: what coglet is told to load."""
    found = re.search(rf'^(?:{keys}):\s*["\']?([^"\'\s#]+)', (model / "cog.yaml").read_text(),
                      re.M)
    assert found, f"{model}/cog.yaml names no {keys}"
    return found.group(1)


class Reference:
    """coglet serving a copy of `model` (with the schema cogserve derives for it).

    coglet serves one entry point: the predictor, or with `train` the trainer (its
    `--x-mode train`), where cogserve serves both at once.
    """

    def __init__(self, model: pathlib.Path, *, train: bool = False) -> None:
        python = venv() / "bin" / "python"
        self.folder = pathlib.Path(tempfile.mkdtemp(prefix="reference-model-"))
        shutil.copytree(model, self.folder, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", ".cog"))
        schema = subprocess.run(
            [sys.executable, "-m", "cogserve.cli", "schema", str(self.folder), "-o",
             str(self.folder / ".cog" / "openapi_schema.json")],
            capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if schema.returncode != 0:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise RuntimeError(f"cogserve schema {model} failed: {schema.stderr[-2000:]}")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ)
        # coglet starts its worker as `python` found on PATH: the venv's comes first
        env.update({"PATH": f"{python.parent}:{env.get('PATH', '')}", "PORT": str(self.port),
                    "TMPDIR": str(self.folder)})
        if train:
            env["COG_TRAIN_TYPE_STUB"] = entry(model, "train")
        else:
            env["COG_PREDICT_TYPE_STUB"] = entry(model, "predict|run")
        self.log = self.folder / "reference.log"
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [str(python), "-m", "cog.server.http", "--host", "127.0.0.1",
                 "--x-mode", "train" if train else "predict"],
                cwd=self.folder, env=env, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the reference exited:\n{self.log.read_text()[-3000:]}")
            try:
                if httpx.get(self.url + "/health-check").json().get("status") == "READY":
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"the reference never got READY:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        """Kill its process group (the server and its worker), then drop the folder."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)
