"""The model author's entry points: BaseRunner, Input(), @streaming and @concurrent."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from cogserve.scope import current_scope

F = TypeVar("F", bound=Callable[..., Any])


class _Missing:
    """Sentinel for "no default given": the input is required."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class FieldInfo:
    """What `Input(...)` declared for one parameter; read by the signature reader."""

    default: Any = MISSING
    description: str | None = None
    ge: float | None = None
    le: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    regex: str | None = None
    choices: list[Any] | None = None
    deprecated: bool | None = None


def Input(  # noqa: N802 - Cog's public name
    default: Any = MISSING,
    *,
    description: str | None = None,
    ge: float | None = None,
    le: float | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    regex: str | None = None,
    choices: list[Any] | None = None,
    deprecated: bool | None = None,
) -> Any:
    """Describe one run() parameter; omitting `default` makes the input required."""
    return FieldInfo(
        default=default,
        description=description,
        ge=ge,
        le=le,
        min_length=min_length,
        max_length=max_length,
        regex=regex,
        choices=list(choices) if choices is not None else None,
        deprecated=deprecated,
    )


class BaseRunner:
    """Subclass and implement `run()` (and optionally `setup()` and `healthcheck()`)."""

    def setup(self) -> Any:
        return None

    def run(self, **kwargs: Any) -> Any:
        raise NotImplementedError("run() is not implemented")

    @property
    def scope(self) -> Any:
        return current_scope()

    def record_metric(self, name: str, value: Any, mode: str = "replace") -> None:
        current_scope().record_metric(name, value, mode)


class BasePredictor(BaseRunner):
    """Deprecated name of BaseRunner; its entry point is `predict()`."""

    def predict(self, **kwargs: Any) -> Any:
        raise NotImplementedError("predict() is not implemented")


def streaming(fn: F | None = None) -> Any:
    """Opt an iterator-returning run() in to Server-Sent Events.

    Usable bare (`@streaming`) or called (`@streaming()`).
    """

    def mark(f: F) -> F:
        f._cogserve_streaming = True  # type: ignore[attr-defined]
        return f

    if fn is None:
        return mark
    return mark(fn)


def concurrent(fn: F | None = None, *, max: int = 1) -> Any:  # noqa: A002 - Cog's keyword
    """Declare how many predictions an async run() may serve at once."""

    def mark(f: F) -> F:
        f._cogserve_concurrency = max  # type: ignore[attr-defined]
        return f

    if fn is None:
        return mark
    return mark(fn)


def is_streaming(fn: Any) -> bool:
    return bool(getattr(_unwrap(fn), "_cogserve_streaming", False))


def declared_concurrency(fn: Any) -> int | None:
    return getattr(_unwrap(fn), "_cogserve_concurrency", None)


def _unwrap(fn: Any) -> Any:
    fn = getattr(fn, "__func__", fn)
    while isinstance(fn, functools.partial):
        fn = fn.func
    return fn
