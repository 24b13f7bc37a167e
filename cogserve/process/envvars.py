"""Environment variables: the one reader, and its one rule for bad values.

Every variable cogserve reads goes through these functions. The rule: unset or empty
means the default; a value that does not parse, or is below the variable's minimum, is
refused with a `DefinitionError` that names the variable and the value. The command
line prints it as `error: ...` and exits 1, so a typo stops the server at start
instead of being ignored. (A variable only the worker reads fails the prediction that
reads it, with the same message.)

Standard library only: the worker imports this before the model.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import pathlib
from typing import TypeVar, overload

from cogserve.exceptions import DefinitionError
from cogserve.process.flag_types import PORT_MAX

E = TypeVar("E", bound=enum.Enum)

_YES = ("1", "true", "yes", "on")
_NO = ("0", "false", "no", "off")


def env_text(name: str, default: str = "") -> str:
    return os.environ.get(name, "").strip() or default


def env_choice(name: str, choices: type[E], default: E) -> E:
    """One of an enum's members, named by its value (any case); another is refused."""
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    for member in choices:
        if member.value == raw:
            return member
    named = " or ".join(repr(member.value) for member in choices)
    raise DefinitionError(f"environment variable {name}={raw!r} is not one of the choices "
                          f"(say {named})")


def env_switch(name: str, default: bool) -> bool:
    """A yes/no variable with a default either way: 1, true, yes, on or 0, false, no,
    off (any case); another value is refused."""
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in _YES:
        return True
    if raw in _NO:
        return False
    raise DefinitionError(f"environment variable {name}={raw!r} is not a yes/no value (say "
                          "1 or 0)")


def env_float(name: str, default: float | None, *, minimum: float | None = None
              ) -> float | None:
    """A number; a trailing `s` (seconds) is allowed."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw.removesuffix("s"))
    except ValueError:
        raise DefinitionError(f"environment variable {name}={raw!r} is not a number") from None
    return _at_least(name, raw, value, minimum)


def env_int(name: str, default: int | None, *, minimum: int | None = None) -> int | None:
    """A whole number (`2.0` and `1e6` are accepted: they are whole)."""
    value = env_float(name, None, minimum=minimum)
    if value is None:
        return default
    if not value.is_integer():
        raise DefinitionError(f"environment variable {name}={os.environ[name]!r} is not a "
                              "whole number")
    return int(value)


def env_duration(name: str, default: float, *, minimum: float | None = None) -> float:
    """Seconds: `0.5`, `0.5s` or `500ms` (Cog's variables use all three)."""
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    try:
        value = float(raw[:-2]) / 1000 if raw.endswith("ms") else float(raw.removesuffix("s"))
    except ValueError:
        raise DefinitionError(f"environment variable {name}={raw!r} is not a duration (say "
                              "0.5, 0.5s or 500ms)") from None
    result = _at_least(name, raw, value, minimum)
    assert result is not None
    return result


@overload
def env_port(name: str, default: int, *, any_free: bool = False) -> int: ...
@overload
def env_port(name: str, default: None, *, any_free: bool = False) -> int | None: ...


def env_port(name: str, default: int | None, *, any_free: bool = False) -> int | None:
    """A TCP port number, 1-65535; `any_free`: 0 too (the system picks a free port)."""
    value = env_int(name, None, minimum=0)
    if value is None:
        return default
    if not (0 if any_free else 1) <= value <= PORT_MAX:
        raise DefinitionError(f"environment variable {name}={os.environ[name]!r} is not a "
                              "port number")
    return value


def _at_least(name: str, raw: str, value: float, minimum: float | None) -> float:
    if value != value or (minimum is not None and value < minimum):  # NaN, or too small
        raise DefinitionError(f"environment variable {name}={raw!r} must be at least "
                              f"{minimum:g}" if minimum is not None else
                              f"environment variable {name}={raw!r} is not a number")
    return value


def env_store_root() -> pathlib.Path:
    """The cache folder of model environments: `COGSERVE_ENV_DIR`, else
    `$XDG_CACHE_HOME/cogserve/envs`, else `~/.cache/cogserve/envs`. (XDG_CACHE_HOME is
    not ours: it is looked up as the XDG spec says, unset or empty meaning ~/.cache.)"""
    explicit = env_text("COGSERVE_ENV_DIR")
    if explicit:
        return pathlib.Path(explicit).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = pathlib.Path(xdg) if xdg else pathlib.Path.home() / ".cache"
    return base / "cogserve" / "envs"


def env_state_root() -> pathlib.Path:
    """The folder of what a server keeps between runs (its prediction stores):
    `COGSERVE_STATE_DIR`, else `$XDG_STATE_HOME/cogserve`, else `~/.local/state/cogserve`
    (XDG_STATE_HOME read as the XDG spec says: unset or empty means ~/.local/state)."""
    explicit = env_text("COGSERVE_STATE_DIR")
    if explicit:
        return pathlib.Path(explicit).expanduser().resolve()
    xdg = os.environ.get("XDG_STATE_HOME")
    base = pathlib.Path(xdg) if xdg else pathlib.Path.home() / ".local" / "state"
    return base / "cogserve"


DEFAULT_MEMORY_ROOT = "/dev/shm"


def memory_root() -> str | None:
    """Where a server makes its folder in memory for data: URL inputs
    (`runtime/folders.py`): `COGSERVE_MEMORY_DIR`, default /dev/shm (None where that is
    not a writable folder); `none` keeps them on disk with the prediction's other files."""
    value = env_text("COGSERVE_MEMORY_DIR")
    if not value:
        return DEFAULT_MEMORY_ROOT if _writable_folder(DEFAULT_MEMORY_ROOT) else None
    if value.lower() == "none":
        return None
    if not _writable_folder(value):
        raise DefinitionError(f"environment variable COGSERVE_MEMORY_DIR={value!r} is not a "
                              "folder this user can write to (or 'none')")
    return value


def _writable_folder(path: str) -> bool:
    return os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)


# ---------------------------------------------------------------- read by the worker
# The parent calls `check_worker_variables` at start, so a bad value stops the server
# there rather than failing the first prediction that downloads a file.


def download_timeout() -> float:
    """Seconds per socket operation of a file input download."""
    return env_duration("COGSERVE_DOWNLOAD_TIMEOUT", 60.0, minimum=0)


def download_max_bytes() -> int:
    return env_int("COGSERVE_DOWNLOAD_MAX_BYTES", 1 << 30, minimum=0) or 0


def download_deadline() -> float:
    """Seconds all of a prediction's downloads may take together."""
    return env_duration("COGSERVE_DOWNLOAD_DEADLINE", 600.0, minimum=0)


def check_worker_variables() -> None:
    download_timeout()
    download_max_bytes()
    download_deadline()


@dataclasses.dataclass(frozen=True)
class VertexRoutes:
    """Where Vertex AI calls a custom container (`cogserve/cloud/vertex.py`)."""

    port: int
    health: str
    predict: str


def vertex_routes() -> VertexRoutes | None:
    """AIP_HTTP_PORT, AIP_HEALTH_ROUTE and AIP_PREDICT_ROUTE, which Vertex AI sets in a
    custom container; None unless all three are set (a route must be a path)."""
    names = ("AIP_HTTP_PORT", "AIP_HEALTH_ROUTE", "AIP_PREDICT_ROUTE")
    if not all(env_text(name) for name in names):
        return None
    port = env_port("AIP_HTTP_PORT", 8080)
    health, predict = env_text("AIP_HEALTH_ROUTE"), env_text("AIP_PREDICT_ROUTE")
    for name, path in (("AIP_HEALTH_ROUTE", health), ("AIP_PREDICT_ROUTE", predict)):
        if not path.startswith("/"):
            raise DefinitionError(f"environment variable {name}={path!r} is not a path "
                                  "(it starts with /)")
    return VertexRoutes(port, health, predict)


def upload_presign() -> float:
    """Seconds a presigned URL of a file output uploaded to a bucket is valid
    (COGSERVE_UPLOAD_PRESIGN; unset or 0: the client gets the object's s3:// URL)."""
    return env_duration("COGSERVE_UPLOAD_PRESIGN", 0.0, minimum=0)


def webhook_secret() -> bytes | None:
    """The key that signs webhook deliveries (`runtime/signing.py`): COGSERVE_WEBHOOK_SECRET
    in the Standard Webhooks format, `whsec_` + base64 of at least 16 bytes; unset: none
    (deliveries are not signed)."""
    import base64
    import binascii

    name = "COGSERVE_WEBHOOK_SECRET"
    raw = env_text(name)
    if not raw:
        return None
    if not raw.startswith("whsec_"):
        raise DefinitionError(f"environment variable {name} does not start with 'whsec_' "
                              "(say whsec_ followed by the key in base64)")
    try:
        key = base64.b64decode(raw.removeprefix("whsec_"), validate=True)
    except (binascii.Error, ValueError):
        raise DefinitionError(f"environment variable {name} is not whsec_ followed by "
                              "base64") from None
    if len(key) < 16:
        raise DefinitionError(f"environment variable {name} holds a {len(key)}-byte key; "
                              "a webhook key must have at least 16 bytes")
    return key


_GLIBC_MALLOC = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")


def malloc_set_by_user() -> bool:
    """Whether glibc's malloc thresholds were set by the user (its own variables), which
    `cogserve.process.heap` then leaves as they are."""
    return (any(os.environ.get(name) for name in _GLIBC_MALLOC)
            or "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""))
