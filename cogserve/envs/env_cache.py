"""The cache folder of model environments.

Layout of the root (`envvars.env_store_root`: `COGSERVE_ENV_DIR`, else
`$XDG_CACHE_HOME/cogserve/envs`, else `~/.cache/cogserve/envs`):

    <key>/                     a ready environment; `cogserve-env.json` inside says what
                               it holds, and its mtime is the last time it was used
    .building-<key>-<pid>-*/   an environment being built; renamed to <key>/ when complete
    .removing-*/               an environment being deleted
    .locks/<key>               held (flock) by the process building <key>: a second
                               process waits for it, then finds the environment ready
    wheels/<cogserve id>/      the cogserve wheel installed into environments
    .tmp/                      uv's TMPDIR while it installs (its lock files stay there)

An environment appears under its key only complete (a rename is atomic), so a build that
fails or is killed never leaves something that looks usable; its leftovers are removed
by the next build or by `cogserve env --prune`.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pathlib
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from cogserve.process.envvars import env_store_root

MARKER = "cogserve-env.json"
LOCKS = ".locks"
BUILDING = ".building-"
REMOVING = ".removing-"
SCRATCH = ".tmp"


@dataclass(frozen=True)
class StoredEnv:
    path: pathlib.Path
    info: dict[str, Any]
    last_used: float


class EnvStore:
    def __init__(self, root: pathlib.Path | None = None) -> None:
        self.root = root or env_store_root()

    @property
    def wheels(self) -> pathlib.Path:
        return self.root / "wheels"

    def scratch(self) -> pathlib.Path:
        """uv's temporary folder while it installs (it leaves lock files there)."""
        path = self.root / SCRATCH
        path.mkdir(parents=True, exist_ok=True)
        return path

    def path(self, key: str) -> pathlib.Path:
        return self.root / key

    def ready(self, key: str) -> pathlib.Path | None:
        """The environment for `key` if it is complete; marks it as used now."""
        path = self.root / key
        try:
            os.utime(path / MARKER)  # the last-used time that --prune reads
        except FileNotFoundError:
            return None
        return path

    async def lock(self, key: str, on_wait: Callable[[], None]) -> IO[bytes]:
        """Hold the build lock of `key` until the returned file is closed.

        Polled, not a blocking flock in a thread: a wait must end when its task is
        cancelled (a server stopped while another process builds).
        """
        folder = self.root / LOCKS
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / key, "wb")  # noqa: SIM115 - the caller closes it
        try:
            waited = False
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return handle
                except BlockingIOError:
                    if not waited:
                        on_wait()
                        waited = True
                    await asyncio.sleep(0.2)
        except BaseException:
            handle.close()
            raise

    def new_build_dir(self, key: str) -> pathlib.Path:
        self.root.mkdir(parents=True, exist_ok=True)
        self.remove_stale_builds()
        path = pathlib.Path(tempfile.mkdtemp(prefix=f"{BUILDING}{key}-{os.getpid()}-",
                                             dir=self.root))
        path.chmod(0o755)  # mkdtemp's 0700 would keep other users (a container's) out
        return path

    def publish(self, build_dir: pathlib.Path, key: str, info: dict[str, Any],
                replace: bool = False) -> pathlib.Path:
        """Make a complete build the environment for `key` (or keep one that won a race).

        `replace` (a rebuild) swaps the old one out only now, so it served until here.
        """
        (build_dir / MARKER).write_text(json.dumps(info, indent=2) + "\n")
        target = self.root / key
        if replace:
            self.discard(target)
        try:
            os.rename(build_dir, target)
        except OSError:
            if not (target / MARKER).exists():
                raise
            shutil.rmtree(build_dir, ignore_errors=True)  # another process finished first
        return target

    def discard(self, path: pathlib.Path) -> None:
        """Delete an environment or a build so that it never looks complete meanwhile."""
        if not path.exists():
            return
        doomed = pathlib.Path(tempfile.mkdtemp(prefix=REMOVING, dir=self.root))
        os.rename(path, doomed / "env")
        shutil.rmtree(doomed, ignore_errors=True)

    def remove_stale_builds(self) -> list[pathlib.Path]:
        """Builds whose process is gone and removals that were interrupted."""
        removed: list[pathlib.Path] = []
        if not self.root.is_dir():
            return removed
        for entry in self.root.iterdir():
            if entry.name.startswith(REMOVING) or (
                    entry.name.startswith(BUILDING) and not _alive(_owner(entry.name))):
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
        return removed

    def environments(self) -> list[StoredEnv]:
        found: list[StoredEnv] = []
        if not self.root.is_dir():
            return found
        for entry in sorted(self.root.iterdir()):
            marker = entry / MARKER
            if entry.name.startswith(".") or not marker.is_file():
                continue
            try:
                info = json.loads(marker.read_text())
            except (OSError, ValueError):
                info = {}
            found.append(StoredEnv(entry, info, marker.stat().st_mtime))
        return found

    def prune(self, older_than_days: float) -> list[pathlib.Path]:
        """Remove environments unused for that long, stale builds and unused wheels."""
        cutoff = time.time() - older_than_days * 86400
        removed = self.remove_stale_builds()
        kept_wheels = set()
        for env in self.environments():
            if env.last_used < cutoff:
                self.discard(env.path)
                removed.append(env.path)
            else:
                kept_wheels.add(str(env.info.get("cogserve_id")))
        if self.wheels.is_dir():
            for folder in self.wheels.iterdir():
                if folder.name not in kept_wheels and folder.stat().st_mtime < cutoff:
                    shutil.rmtree(folder, ignore_errors=True)
                    removed.append(folder)
        return removed


def _owner(name: str) -> int:
    try:
        return int(name[len(BUILDING):].split("-")[1])
    except (IndexError, ValueError):
        return 0


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
