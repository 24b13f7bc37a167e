import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from harness import PORTS_DIR, Server  # noqa: E402

# Every process the suite starts inherits this variable, so the end-of-session check
# finds exactly the suite's own leftovers, whoever else runs cogserve on the machine.
SESSION_MARK = "COGSERVE_TEST_SESSION"
ENV_DIR = "model-envs"
STATE_DIR = "server-state"  # the servers' default prediction stores (COGSERVE_STATE_DIR)
PORTS = "ports"  # the ports the run handed out (harness.free_port), one empty file each
OUTER_TMPDIR = "COGSERVE_TEST_OUTER_TMPDIR"  # the TMPDIR the run was started with


def pytest_configure(config: pytest.Config) -> None:
    """Give the whole session a TMPDIR of its own (servers, workers, the CLI, tmp_path);
    each of pytest-xdist's workers one of its own, beside the main process's, not inside it
    (Chromium's socket path must stay short)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        os.environ[OUTER_TMPDIR] = tempfile.gettempdir()
    root = tempfile.mkdtemp(prefix=f"pytest-cogserve-suite-{worker or 'main'}-",
                            dir=os.environ.get(OUTER_TMPDIR))
    os.environ["TMPDIR"] = root
    tempfile.tempdir = None  # gettempdir() caches: make it read TMPDIR again
    os.environ[SESSION_MARK] = secrets.token_hex(8)
    # model environments (cogserve/envs) of the whole session; uv keeps its download cache
    os.environ["COGSERVE_ENV_DIR"] = os.path.join(root, ENV_DIR)
    # every server's default store (one SQLite file per model folder and port) lives here,
    # not in the home folder, and goes with the session
    os.environ["COGSERVE_STATE_DIR"] = os.path.join(root, STATE_DIR)
    if PORTS_DIR not in os.environ or not worker:
        # the run's own (pytest-xdist's workers start after this, and share the main one's)
        os.environ[PORTS_DIR] = os.path.join(root, PORTS)
        os.mkdir(os.environ[PORTS_DIR])
    config.stash[_root_key] = root
    config.addinivalue_line("markers", "breaks_shared: runs after the other tests of its "
                            "module (it breaks the fixture they share)")


# Under pytest-xdist (scripts/test runs `-n 2 --dist loadgroup`) these modules' tests all
# run on one worker, in one go: each module shares something costly among its tests (a Ray
# cluster; a browser). Every other test is sent to a worker on its own. (xdist's own
# xdist_group mark does the same by renaming the test, which pytest 9.2 no longer allows:
# pytest-xdist issue 1386.)
ONE_WORKER = frozenset({"tests/test_deploy_ray.py", "tests/test_deploy_ray_haproxy.py",
                        "tests/test_playground_browser.py"})


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """--dist loadgroup: xdist's scope scheduler, with ONE_WORKER's modules as the groups."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduler(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in ONE_WORKER else nodeid

    return Scheduler(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `breaks_shared` run after the other tests of their module, which keep
    their random order (pytest-randomly shuffles before this hook): such a test breaks
    what the module's tests share (a replica of its Ray cluster) and nobody uses it after."""
    module_at: dict[Path, int] = {}
    for item in items:
        module_at.setdefault(item.path, len(module_at))
    items.sort(key=lambda item: (module_at[item.path],
                                 item.get_closest_marker("breaks_shared") is not None))


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
                   and p.name not in (ENV_DIR, STATE_DIR, PORTS))
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
