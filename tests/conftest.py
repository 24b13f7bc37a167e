import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from harness import Server  # noqa: E402

# Every process the suite starts inherits this variable, so the end-of-session check
# finds exactly the suite's own leftovers, whoever else runs cogserve on the machine.
SESSION_MARK = "COGSERVE_TEST_SESSION"
ENV_DIR = "model-envs"
STATE_DIR = "server-state"  # the servers' default prediction stores (COGSERVE_STATE_DIR)


def pytest_configure(config: pytest.Config) -> None:
    """Give the whole session a TMPDIR of its own (servers, workers, the CLI, tmp_path)."""
    root = tempfile.mkdtemp(prefix="pytest-cogserve-suite-")
    os.environ["TMPDIR"] = root
    tempfile.tempdir = None  # gettempdir() caches: make it read TMPDIR again
    os.environ[SESSION_MARK] = secrets.token_hex(8)
    # model environments (cogserve/envs) of the whole session; uv keeps its download cache
    os.environ["COGSERVE_ENV_DIR"] = os.path.join(root, ENV_DIR)
    # every server's default store (one SQLite file per model folder and port) lives here,
    # not in the home folder, and goes with the session
    os.environ["COGSERVE_STATE_DIR"] = os.path.join(root, STATE_DIR)
    config.stash[_root_key] = root


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the session TMPDIR (after pytest's own tmp_path cleanup has run)."""
    root = config.stash.get(_root_key, None)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)


_root_key = pytest.StashKey[str]()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print pytest-randomly's seed even under -q, so a failing order can be replayed."""
    seed = getattr(terminalreporter.config.option, "randomly_seed", None)
    if seed is not None:
        terminalreporter.write_line(f"test order: replay it with --randomly-seed={seed}")


def _suite_processes() -> list[tuple[int, str]]:
    """Live processes (not zombies) that carry this session's mark, other than pytest."""
    mark = f"{SESSION_MARK}={os.environ[SESSION_MARK]}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if mark not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone, or a zombie whose environ is no longer readable
            continue
        found.append((int(entry.name), cmd))
    return found


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind(pytestconfig: pytest.Config) -> Iterator[None]:
    """Fail the run if any test left a process running or a file in the session TMPDIR.

    Processes get a short while to finish dying (a SIGKILL is not instant); whatever is
    still there is killed by pid, then reported.
    """
    yield
    root = Path(pytestconfig.stash[_root_key])
    deadline = time.monotonic() + 10
    while (procs := _suite_processes()) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid, _ in procs:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    files = sorted(p.name for p in root.iterdir() if not p.name.startswith("pytest-of-")
                   and p.name not in (ENV_DIR, STATE_DIR))
    assert not procs, f"tests left processes running: {procs}"
    assert not files, f"tests left temporary files in TMPDIR: {files}"


@pytest.fixture
def serve() -> Iterator:
    """`serve("model-dir", *args, env=...)` starts a server that is killed after the test."""
    started: list[Server] = []

    def start(model, *args, **kwargs) -> Server:
        server = Server(model, *args, **kwargs)
        started.append(server)
        return server

    yield start
    errors = []
    for server in started:  # stop every one, even if one of them reports a leak
        try:
            server.stop()
        except AssertionError as error:
            errors.append(error)
    if errors:
        raise errors[0]


@pytest.fixture
def receiver() -> Iterator:
    """`receiver(fail_first=..., hang=...)` starts a local webhook receiver, closed after."""
    from receiver import Receiver

    started: list[Receiver] = []

    def start(**kwargs) -> Receiver:
        hook = Receiver(**kwargs)
        started.append(hook)
        return hook

    yield start
    for hook in started:
        hook.close()
