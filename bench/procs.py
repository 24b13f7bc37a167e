"""Start servers as their own process groups and end them by pid; read their memory.

Every server the bench starts goes through `Proc`: it is started in a new session (so
its group id is its pid), bound to 127.0.0.1 on a port chosen free, and ended by
`stop()` - SIGTERM to the group, then SIGKILL to the group and to every descendant
found in /proc (a worker that made its own session would escape a group kill).
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator

_SETPRIV = shutil.which("setpriv") is not None
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _parents() -> dict[int, int]:
    """pid -> ppid for every process visible in /proc."""
    result: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = pathlib.Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # the command name may hold spaces or parentheses: split after the last ')'
        fields = stat[stat.rindex(")") + 2:].split()
        result[int(entry)] = int(fields[1])
    return result


def descendants(pid: int) -> list[int]:
    parents = _parents()
    found: list[int] = []
    frontier = [pid]
    while frontier:
        current = frontier.pop()
        children = [p for p, pp in parents.items() if pp == current]
        found.extend(children)
        frontier.extend(children)
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (0 if gone)."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def tree_cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU time used so far by a server process and by all its descendants (its workers).

    Read before and after a rate run, the differences over the requests served are the
    parent's and the workers' CPU per request: steadier than req/s on a shared machine,
    where other load takes turns on the cores but does not add to a process's own time.
    """
    return cpu_seconds(pid), sum(cpu_seconds(child) for child in descendants(pid))


def command_line(pid: int) -> str:
    """A process's argv joined by spaces, or its title where it set one ('' if gone)."""
    try:
        return pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace").strip()
    except OSError:
        return ""


def status_kib(pid: int, field: str) -> int:
    """A `VmRSS`/`VmHWM` style field of /proc/PID/status, in KiB (0 if gone)."""
    try:
        for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def reset_peak_rss(pid: int) -> bool:
    """Reset VmHWM so the next read is the peak of what happens from now on."""
    try:
        pathlib.Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


class Proc:
    """One server process (and whatever it spawns)."""

    def __init__(self, argv: list[str], *, cwd: pathlib.Path | None = None,
                 env: dict[str, str] | None = None, log: pathlib.Path) -> None:
        self.argv = argv
        self.log_path = log
        log.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log, "wb")  # noqa: SIM115 - closed in stop()
        full_env = dict(os.environ)
        full_env.update(env or {})
        # if the bench itself is killed (even by SIGKILL) the server dies with it
        launcher = ["setpriv", "--pdeathsig", "KILL"] if _SETPRIV else []
        self.started = time.perf_counter()
        self.process = subprocess.Popen([*launcher, *argv], cwd=cwd, env=full_env, stdout=self._log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True)

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def tree(self) -> list[int]:
        return [self.pid, *descendants(self.pid)] if self.alive() else []

    def rss_kib(self) -> int:
        """Resident memory of the server and all its descendants."""
        return sum(status_kib(pid, "VmRSS") for pid in self.tree())

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        family = self.tree()
        if self.alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        for pid in family[1:]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        self._log.close()


@contextlib.contextmanager
def running(proc: Proc) -> Iterator[Proc]:
    try:
        yield proc
    finally:
        proc.stop()
