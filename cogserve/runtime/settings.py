"""Every knob of one server, and the one builder that makes them for `serve`,
`predict`/`train` and a Ray replica (`for_model`).

Front ends and the CLI build it here and hand it to the `Service`; it imports nothing of
them, so the runtime takes its `Settings` without reaching up into observability or cli.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from cogserve.model.config import ModelConfig
from cogserve.process import envvars
from cogserve.process.envvars import (
    env_duration,
    env_float,
    env_int,
    env_port,
    env_state_root,
    env_switch,
    env_text,
)
from cogserve.process.netpolicy import URLPolicy
from cogserve.runtime import logcap
from cogserve.runtime.history import DEFAULT_CAPACITY, DEFAULT_MAX_BYTES

if TYPE_CHECKING:
    from cogserve.envs.model_env import ModelEnvironment


# the recent predictions' bounds (the cache in memory, `runtime/store/cache.py`, and the
# durable store's)
DEFAULT_COUNT = 1000
DEFAULT_BYTES = 64 * 1024 * 1024
COUNT_VARIABLE = "COGSERVE_RECENT_PREDICTIONS"
BYTES_VARIABLE = "COGSERVE_RECENT_PREDICTIONS_BYTES"
AGE_VARIABLE = "COGSERVE_RECENT_PREDICTIONS_AGE"  # the durable store's age bound

# `--store` / `COGSERVE_STORE`: which prediction store a server uses (opened by
# `runtime/store/backends.py`):
# - unset, or `sqlite`: SQLite in the state folder (`envvars.env_state_root()/predictions`),
#   one file per model folder and port, so a server restarted the same way finds its
#   store and two servers of one model on different ports never meet (the default);
# - `memory`: no store; finished predictions are kept in memory only;
# - a path: that SQLite file;
# - `redis://HOST:PORT/DB` (or `rediss://`, `unix://`): Redis, shared by replicas.
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


def choose_store(value: str, model_dir: pathlib.Path, port: int) -> StoreChoice:
    """The store `value` names (`--store`, else COGSERVE_STORE; empty: the default)."""
    value = value.strip()
    if value.lower() == MEMORY:
        return IN_MEMORY
    if not value or value.lower() == SQLITE:
        return StoreChoice(StoreKind.SQLITE, str(default_store_path(model_dir, port)))
    if value.startswith(_REDIS_SCHEMES):
        return StoreChoice(StoreKind.REDIS, value)
    return StoreChoice(StoreKind.SQLITE, str(pathlib.Path(value).expanduser().resolve()))


def default_store_path(model_dir: pathlib.Path, port: int) -> pathlib.Path:
    """`<state>/predictions/<folder name>-<hash of its path>-<port>.sqlite3`."""
    folder = model_dir.resolve()
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", folder.name)[:64] or "model"
    return env_state_root() / "predictions" / f"{name}-{digest}-{port}.sqlite3"


@dataclass(frozen=True)
class ObservabilityOptions:
    metrics: bool = True
    metrics_port: int | None = None  # serve /metrics here instead of on the API port
    metrics_host: str = "127.0.0.1"

    @classmethod
    def from_env(cls, *, metrics: bool | None = None, metrics_port: int | None = None,
                 host: str = "127.0.0.1") -> ObservabilityOptions:
        """Flags win over COGSERVE_METRICS (0/false/off/no turns metrics off) and
        COGSERVE_METRICS_PORT."""
        if metrics is None:
            metrics = env_switch("COGSERVE_METRICS", True)
        if metrics_port is None:
            metrics_port = env_port("COGSERVE_METRICS_PORT", None)
        return cls(metrics=metrics, metrics_port=metrics_port, metrics_host=host)


@dataclass
class Settings:
    """Runtime knobs, from flags and the environment variables of the runtime spec."""

    concurrency: int | None = None
    setup_timeout: float | None = None
    cancel_timeout: float = 5.0
    drain_timeout: float = 10.0  # seconds in-flight predictions get at shutdown
    healthcheck_timeout: float = 5.0
    upload_url: str | None = None
    url_policy: URLPolicy = URLPolicy.ANY  # what webhooks, uploads and downloads may reach
    model_name: str | None = None
    model_version: str | None = None
    id_prefix: str = ""  # generated prediction ids start with it (cogserve.deploy.ray)
    stream_history: int = DEFAULT_CAPACITY  # SSE replay buffer, in events
    stream_history_bytes: int = DEFAULT_MAX_BYTES  # ... and in bytes
    recent_count: int = DEFAULT_COUNT  # finished predictions kept for GET / PUT retries
    recent_bytes: int = DEFAULT_BYTES
    logs_limit: int = logcap.DEFAULT_LIMIT  # characters of logs a prediction keeps; 0: all
    recent_age: float | None = None  # seconds a finished one stays in the durable store
    # --store: where predictions outlive the process. `serve` resolves its default (a
    # SQLite file per model folder and port: settings.choose_store); made otherwise: none
    store: StoreChoice = IN_MEMORY
    store_lease: float = 10.0  # seconds a dead replica's work waits before another takes it
    playground: bool = True  # the browser page at /docs (--no-playground)
    mcp: bool = True  # the model as an MCP tool at /mcp (--no-mcp)
    openai: bool = True  # the OpenAI API at /v1 for language and image models (--no-openai)
    sagemaker: bool = False  # SageMaker's /ping and /invocations (--sagemaker)
    # metrics on/off and their port (`cogserve serve` fills it; None: the defaults)
    observability: ObservabilityOptions | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    environment: ModelEnvironment | None = None  # the model's own packages (cogserve/envs)
    queue_size: int = 0  # predictions that may wait for a slot; 0 = Cog's immediate 409
    queue_timeout: float | None = None  # seconds one may wait there before it fails
    predict_timeout: float | None = None  # seconds a prediction may run (its deadline)
    workers: int = 1  # worker processes, each with the model's slots
    gpus: list[str] = field(default_factory=list)  # CUDA_VISIBLE_DEVICES, round-robin
    predictor: str | None = None  # --predictor, kept when --reload re-reads cog.yaml
    # where data: URL inputs are written, in memory (`runtime/folders.py`); None: on disk
    memory_dir: str | None = field(default_factory=envvars.memory_root)

    @classmethod
    def from_env(cls, config: ModelConfig, upload_url: str | None = None) -> Settings:
        envvars.check_worker_variables()  # refused here, at start, not in a prediction
        setup_timeout = env_float("COG_SETUP_TIMEOUT", None)
        return cls(
            concurrency=env_int("COG_MAX_CONCURRENCY", None) or config.concurrency,
            setup_timeout=setup_timeout if setup_timeout else None,
            cancel_timeout=env_float("COGSERVE_CANCEL_TIMEOUT", 5.0) or 5.0,
            drain_timeout=_non_negative(env_float("COGSERVE_DRAIN_TIMEOUT", 10.0), 10.0),
            healthcheck_timeout=env_float("COGSERVE_HEALTHCHECK_TIMEOUT", 5.0) or 5.0,
            upload_url=upload_url,
            url_policy=URLPolicy.from_env(),
            stream_history=env_int("COG_STREAM_HISTORY_CAPACITY", DEFAULT_CAPACITY,
                                   minimum=0) or 0,
            stream_history_bytes=env_int("COG_STREAM_HISTORY_BYTES", DEFAULT_MAX_BYTES,
                                         minimum=0) or 0,
            recent_count=env_int(COUNT_VARIABLE, DEFAULT_COUNT) or 0,
            recent_bytes=env_int(BYTES_VARIABLE, DEFAULT_BYTES) or 0,
            logs_limit=env_int(logcap.VARIABLE, logcap.DEFAULT_LIMIT, minimum=0) or 0,
            recent_age=env_float(AGE_VARIABLE, None, minimum=0) or None,
            store_lease=env_duration("COGSERVE_STORE_LEASE", 10.0, minimum=0.5),
            extra_env=config.environment,
            queue_size=max(0, env_int("COGSERVE_QUEUE_SIZE", 0) or 0),
            queue_timeout=env_float("COGSERVE_QUEUE_TIMEOUT", None) or None,
            predict_timeout=env_float("COGSERVE_PREDICT_TIMEOUT", None) or None,
            workers=max(1, env_int("COGSERVE_WORKERS", 1) or 1),
            gpus=parse_gpus(env_text("COGSERVE_GPUS")),
        )


def apply_environment(config: ModelConfig) -> None:
    """cog.yaml's `environment:` into this process's environment (what is set wins)."""
    for key, value in config.environment.items():
        os.environ.setdefault(key, value)


def for_model(config: ModelConfig, *, upload_url: str | None = None,
              no_env: bool = False) -> Settings:
    """The one settings builder: cog.yaml's environment applied, the variables read, the
    model's own environment (cogserve/envs) attached. `serve`, `predict`/`train` and a
    Ray replica each start here and then set what their flags say."""
    from cogserve.envs import model_env

    apply_environment(config)
    settings = Settings.from_env(config, upload_url=upload_url)
    settings.environment = model_env.for_model(config, no_env)
    return settings


def parse_gpus(raw: str) -> list[str]:
    """`0,1` -> ["0", "1"]: the CUDA_VISIBLE_DEVICES of worker 0, 1, 0, 1, ..."""
    return [part.strip() for part in raw.split(",") if part.strip()]


def _non_negative(value: float | None, default: float) -> float:
    return default if value is None or value < 0 else value
