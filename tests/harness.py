"""Start the real `cogserve serve` as a process and talk HTTP to it.

Every process a test starts is ended by its pid, on success and on failure.
Each server gets a TMPDIR of its own: a server ended with SIGKILL cannot remove its
temporary folder, so the harness does; a server that exited by itself must have
removed everything it made there (that is a leak of the server, and fails the test).
"""

from __future__ import annotations

import os
import pathlib
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

import httpx

MODELS = pathlib.Path(__file__).parent / "models"


_HANDED_OUT: set[int] = set()  # ports given to a server or receiver of this test run
# A folder shared by every process of one test run (pytest-xdist's workers: conftest.py
# sets it before they start): a port handed out by one is claimed there by a file.
PORTS_DIR = "COGSERVE_TEST_PORTS"


def claim_port(port: int) -> bool:
    """Claim `port` for this test run: False if this run has handed it out already."""
    if port in _HANDED_OUT:
        return False
    shared = os.environ.get(PORTS_DIR)
    if shared:
        try:
            os.close(os.open(os.path.join(shared, str(port)), os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return False
    _HANDED_OUT.add(port)
    return True


def _listening_ports() -> range:
    """Ports the kernel never gives an outgoing connection: those below (or above) the
    ephemeral range. A port taken from the ephemeral range (bind to port 0) is free when
    it is picked, but before its server binds it a client socket of another test may be
    given it as its local port, and the server's bind then fails with "address already
    in use" (seen: a module's fixture server, once in a run of 1,248 tests)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(part) for part in f.read().split())
    except (OSError, ValueError):
        low, high = 32768, 60999  # Linux's default
    # from 20000: Ray's workers listen on 10002-19999 (its default worker port range)
    return range(20000, low) if low - 20000 >= 4096 else range(high + 1, 65536)


_PORTS = _listening_ports()


def free_port() -> int:
    """A port free now, outside the ephemeral range, and never handed out before in this
    run: two servers started together (by one process or by two of pytest-xdist's
    workers) never get the same port, and no client socket takes it before its server
    binds it (`_listening_ports`)."""
    while True:
        port = random.choice(_PORTS)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:  # someone else's listener
                continue
        if claim_port(port):
            return port


class Server:
    """A running `cogserve serve` for one model folder."""

    def __init__(self, model: str | pathlib.Path, *args: str, env: dict[str, str] | None = None,
                 wait: str | None = "READY", timeout: float = 30.0,
                 prefix: list[str] | None = None, port: int | None = None) -> None:
        """`prefix` runs the server through a command that ends by exec-ing it (its pid
        stays the server's), e.g. to give it a DNS configuration of its own. `port`: the
        port of a server that was stopped, to start it again the same way."""
        self.directory = pathlib.Path(model) if os.path.isabs(str(model)) else MODELS / model
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.NamedTemporaryFile(prefix="cogserve-test-", suffix=".log",
                                               delete=False)
        full_env = dict(os.environ)
        full_env.setdefault("LOG_FORMAT", "console")
        # a test that sets TMPDIR owns that folder and checks it itself
        self.own_tmp: pathlib.Path | None = None
        if "TMPDIR" not in (env or {}):
            self.own_tmp = pathlib.Path(tempfile.mkdtemp(prefix="server-tmp-"))
            full_env["TMPDIR"] = str(self.own_tmp)
        full_env.update(env or {})
        self.process = subprocess.Popen(
            [*(prefix or ()), sys.executable, "-m", "cogserve.cli", "serve", str(self.directory),
             "--host", "127.0.0.1", "--port", str(self.port), *args],
            stdout=self.log, stderr=subprocess.STDOUT, env=full_env,
            start_new_session=True,
        )
        self.client = httpx.Client(base_url=self.url, timeout=60.0)
        if wait:
            try:
                self.wait_for(wait, timeout=timeout)
            except BaseException:  # the caller never gets the object: stop it here
                self.stop()
                raise

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        return pathlib.Path(self.log.name).read_text(errors="replace")

    def health(self) -> dict[str, Any]:
        return self.client.get("/health-check").json()

    def wait_for(self, *statuses: str, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"server exited ({self.process.returncode}):\n"
                                     f"{self.output()}")
            try:
                last = self.health()
                if last["status"] in statuses:
                    return last
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"never reached {statuses}; last health {last}\n{self.output()}")

    def worker_pids(self) -> list[int]:
        out = subprocess.run(["pgrep", "-P", str(self.pid)], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]

    def predict(self, **inputs: Any) -> httpx.Response:
        return self.client.post("/predictions", json={"input": inputs})

    def stop(self) -> None:
        self.client.close()
        exited_by_itself = self.process.poll() is not None
        children = [] if exited_by_itself else self.worker_pids()
        try:  # also a worker that a crashed server left behind in its group
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.log.close()
        os.unlink(self.log.name)
        if self.own_tmp is None:
            return
        left = sorted(str(p.relative_to(self.own_tmp)) for p in self.own_tmp.rglob("*"))
        shutil.rmtree(self.own_tmp, ignore_errors=True)
        if exited_by_itself and self.process.returncode == 0:
            assert not left, f"the server exited 0 but left temporary files behind: {left}"

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def wait_until(check: Any, timeout: float = 30.0) -> Any:
    """`check()`'s first truthy value, asked every 20 ms (AssertionError after `timeout`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.02)
    raise AssertionError("the condition never held")


def write_model(tmp: pathlib.Path, source: str, cog_yaml: str = 'run: "run.py:Runner"\n',
                name: str = "run.py") -> pathlib.Path:
    """A throwaway model folder for one test."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "cog.yaml").write_text(cog_yaml)
    (tmp / name).write_text(source)
    return tmp
