"""The folders of one server's temporary files: the one owner of where they are.

- **The disk folder** (`root`, in the parent's TMPDIR): each worker's TMPDIR, with one
  subfolder per worker when there are several. Input documents and tensors too large for
  a frame cross in it, the worker makes its prediction folders in it (downloads, the
  model's own tempfiles) and writes file outputs there.
- **The memory folder** (`memory`, on `/dev/shm`, or wherever `COGSERVE_MEMORY_DIR`
  says: `Settings.memory_dir`; none when that is `none`): where
  a worker writes the files of `data:` URL inputs (`worker/tempdirs.py`). They are no
  larger than the request body that carried them, and on a disk each cost a file
  creation and removal in the journal: 0.3-0.6 ms of the worker's CPU per input on the
  bench's ext4 against 0.05 ms on tmpfs (issue 35, bench scenario 12). A worker that
  finds it full (a container's 64 MiB /dev/shm) writes to its disk folder instead.

Both are emptied when a worker (re)starts and removed when the server stops.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable

from cogserve.runtime.pool import Member
from cogserve.wire import protocol


class ServerFolders:
    """Made with the pool (`Workers`); each member's folders are set on it here."""

    def __init__(self, members: list[Member], memory_dir: str | None) -> None:
        self.root = tempfile.mkdtemp(prefix=protocol.SERVER_DIR_PREFIX)
        self.memory = _memory_root(memory_dir)
        if len(members) == 1:
            members[0].tmpdir = self.root
            members[0].memdir = self.memory
        else:
            for member in members:
                member.tmpdir = os.path.join(self.root, f"worker-{member.index}")
                if self.memory is not None:
                    member.memdir = os.path.join(self.memory, f"worker-{member.index}")
        # where a prediction folder the worker hands over may be (`handover.discard_folder`)
        self.worker_dirs = frozenset(
            folder for member in members for folder in (member.tmpdir, member.memdir) if folder)

    def worker_env(self, member: Member) -> dict[str, str]:
        """A worker's folders as its environment says them."""
        env = {"TMPDIR": member.tmpdir}
        if member.memdir:
            env[protocol.MEMORY_DIR_ENV] = member.memdir
        return env

    def clear(self, member: Member) -> None:
        """Empty a worker's folders before it (re)starts: what the last one left."""
        for folder in (member.tmpdir, member.memdir):
            if folder:
                _clear(folder)

    def roots(self) -> Iterable[str]:
        return [self.root] if self.memory is None else [self.root, self.memory]

    def remove(self) -> None:
        for root in self.roots():
            shutil.rmtree(root, ignore_errors=True)


_MEMORY_PREFIX = "cogserve-mem-"  # then the parent's pid and a dash: see `_reap`


def _memory_root(shm: str | None) -> str | None:
    """A folder of this server in the folder `shm` (`Settings.memory_dir`), or None."""
    if shm is None:
        return None
    _reap(shm)
    try:
        return tempfile.mkdtemp(prefix=f"{_MEMORY_PREFIX}{os.getpid()}-", dir=shm)
    except OSError:
        return None


def _reap(shm: str) -> None:
    """Remove the memory folders of servers that are gone. A server killed (SIGKILL, the
    OOM killer) removes nothing, and on a host rather than in a container what it left
    in /dev/shm would hold memory until the machine restarts. A folder removed under a
    live server (another pid namespace sharing the folder) costs it nothing: its workers
    write data: URLs to disk when the memory folder fails them."""
    try:
        entries = [entry.name for entry in os.scandir(shm)
                   if entry.name.startswith(_MEMORY_PREFIX)]
    except OSError:
        return
    for name in entries:
        pid = name[len(_MEMORY_PREFIX):].partition("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(shm, name), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def _clear(folder: str) -> None:
    """Remove everything inside `folder`, keeping it (made if it is not there)."""
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        os.makedirs(folder, exist_ok=True)
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.unlink(entry.path)
            except OSError:
                pass
