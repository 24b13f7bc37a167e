"""`--store` / `COGSERVE_STORE`: which prediction store a server uses, and opening it.

- unset, or `sqlite`: SQLite in the state folder (`envvars.env_state_root()/predictions`),
  one file per model folder and port, so a server restarted the same way finds its
  store and two servers of one model on different ports never meet. The default: a
  finished sync prediction's record costs scenario 1 within the 3% issue 27 allows
  (`runtime/sqlite_finished.py`; bench/FINDINGS.md);
- `memory`: no store; finished predictions are kept in memory only (`runtime/store.py`);
- a path: that SQLite file;
- `redis://HOST:PORT/DB` (or `rediss://`, `unix://`): Redis, shared by replicas.
"""

from __future__ import annotations

import hashlib
import pathlib
import re
from dataclasses import dataclass
from enum import StrEnum

from cogserve.envvars import env_state_root
from cogserve.runtime.records import PredictionStore

MEMORY = "memory"
SQLITE = "sqlite"
_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


class StoreKind(StrEnum):
    MEMORY = "memory"
    SQLITE = "sqlite"
    REDIS = "redis"


@dataclass(frozen=True, slots=True)
class StoreChoice:
    kind: StoreKind
    location: str = ""  # the SQLite file, or the Redis URL

    def describe(self) -> str:
        return "memory" if self.kind is StoreKind.MEMORY else f"{self.kind} {self.location}"


IN_MEMORY = StoreChoice(StoreKind.MEMORY)


def choose(value: str, model_dir: pathlib.Path, port: int) -> StoreChoice:
    """The store `value` names (`--store`, else COGSERVE_STORE; empty: the default)."""
    value = value.strip()
    if value.lower() == MEMORY:
        return IN_MEMORY
    if not value or value.lower() == SQLITE:
        return StoreChoice(StoreKind.SQLITE, str(default_path(model_dir, port)))
    if value.startswith(_REDIS_SCHEMES):
        return StoreChoice(StoreKind.REDIS, value)
    return StoreChoice(StoreKind.SQLITE, str(pathlib.Path(value).expanduser().resolve()))


def default_path(model_dir: pathlib.Path, port: int) -> pathlib.Path:
    """`<state>/predictions/<folder name>-<hash of its path>-<port>.sqlite3`."""
    folder = model_dir.resolve()
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", folder.name)[:64] or "model"
    return env_state_root() / "predictions" / f"{name}-{digest}-{port}.sqlite3"


def open_store(choice: StoreChoice, namespace: str) -> PredictionStore | None:
    """The store, opened (raises StoreError, saying what is wrong and the way out);
    None for `memory`. `namespace` keeps models apart in a shared Redis."""
    if choice.kind is StoreKind.SQLITE:
        from cogserve.runtime.sqlite_store import SQLiteStore

        return SQLiteStore(choice.location)
    if choice.kind is StoreKind.REDIS:
        from cogserve.runtime.redis_store import RedisStore

        return RedisStore(choice.location, namespace)
    return None
