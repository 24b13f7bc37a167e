"""The model author's entry points: BaseRunner, Input(), @streaming, @concurrent, @batch."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from cogserve.sdk.scope import current_scope
from cogserve.sdk.types import Path

_F = TypeVar("_F", bound=Callable[..., Any])


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
    """What `Input(...)` declared for one parameter; read by the signature reader.

    Cog's fields, names and defaults. `default` is MISSING when `Input()` was given none
    (Cog's schema generator tells the two apart by reading the source), a `DefaultFactory`
    for `Input(default_factory=...)`.
    """

    default: Any = None
    description: str | None = None
    ge: int | float | None = None
    le: int | float | None = None
    min_length: int | None = None
    max_length: int | None = None
    regex: str | None = None
    choices: list[str | int] | None = None
    deprecated: bool | None = None
    accept: str | None = None


@dataclass(frozen=True)
class DefaultFactory:
    """`Input(default_factory=list)`: each prediction that omits the input gets a new value.

    Cog 0.23.1 refuses `default_factory` (its schema is generated from the source, where
    a call has no value); cogserve reads the signature at run time, so it can call the
    factory: once at load for the published default, then once per prediction.
    """

    factory: Callable[[], Any]


def Input(  # noqa: N802 - Cog's public name
    default: Any = MISSING,
    *,
    default_factory: Callable[..., Any] | None = None,
    description: str | None = None,
    ge: int | float | None = None,
    le: int | float | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    regex: str | None = None,
    choices: list[str | int] | None = None,
    deprecated: bool | None = None,
    accept: str | None = None,
) -> Any:
    """Describe one run() parameter; omitting `default` makes the input required.

    `accept` ("image/*", ".safetensors,.bin") applies to Path and File inputs and is
    published as `x-cog-accept`.
    """
    if default is Ellipsis:  # `Input(...)`: pydantic's "required", as older SDKs wrote it
        default = MISSING
    if default_factory is not None:
        if default is not MISSING:
            raise TypeError("Input() takes default or default_factory, not both")
        if not callable(default_factory):
            raise TypeError(f"Input(default_factory=...) must be callable, not "
                            f"{type(default_factory).__name__}")
        default = DefaultFactory(default_factory)
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
        accept=accept,
    )


# Cog's signature, `default=None`: the MISSING above only tells "not given" from None.
Input.__signature__ = inspect.signature(Input, eval_str=True).replace(  # type: ignore[attr-defined]
    parameters=[p.replace(default=None) if p.name == "default" else p
                for p in inspect.signature(Input, eval_str=True).parameters.values()])


class BaseRunner:
    """Subclass and implement `run()` (and optionally `setup()` and `healthcheck()`)."""

    def setup(self, weights: Path | str | None = None) -> None:
        """Load the model; called once before the first prediction. `weights` is
        COG_WEIGHTS when the method takes it."""

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """The prediction. A subclass written for the older API implements `predict()`
        instead, and this calls it, as Cog's bridge does."""
        if user_defines(type(self), "predict") and not user_defines(type(self), "run"):
            return self.predict(*args, **kwargs)
        raise NotImplementedError("run has not been implemented by parent class.")

    def predict(self, *args: Any, **kwargs: Any) -> Any:
        """Deprecated name of run(): warns, then calls it."""
        warnings.warn(f"{type(self).__name__}.predict() is deprecated; use run() instead",
                      DeprecationWarning, stacklevel=2)
        return self.run(*args, **kwargs)

    @property
    def scope(self) -> Any:
        return current_scope()

    def record_metric(self, key: str, value: Any, mode: str = "replace") -> None:
        current_scope().record_metric(key, value, mode)


class BasePredictor(BaseRunner):
    """Deprecated name of BaseRunner."""


def user_defines(cls: type, name: str) -> bool:
    """True if `cls` (not just BaseRunner/BasePredictor) implements `name`."""
    for klass in cls.__mro__:
        if klass in (BaseRunner, BasePredictor, object):
            return False
        if callable(vars(klass).get(name)):
            return True
    return False


def streaming(fn: _F | None = None) -> _F | Callable[[_F], _F]:
    """Opt an iterator-returning run() in to Server-Sent Events.

    Usable bare (`@streaming`) or called (`@streaming()`).
    """

    def mark(f: _F) -> _F:
        f._cogserve_streaming = True  # type: ignore[attr-defined]
        return f

    if fn is None:
        return mark
    return mark(fn)


def concurrent(fn: _F | None = None, *, max: int = 1) -> _F | Callable[[_F], _F]:  # noqa: A002
    """Declare how many predictions an async run() may serve at once (`max` is Cog's
    keyword). A sync run() with max > 1 is refused when the model loads, naming its line."""
    if isinstance(max, bool) or not isinstance(max, int):
        raise TypeError("concurrent max must be an integer")
    if max < 1:
        raise ValueError("concurrent max must be at least 1")

    def mark(f: _F) -> _F:
        f._cogserve_concurrency = max  # type: ignore[attr-defined]
        return f

    if fn is None:
        return mark
    if not callable(fn):
        raise TypeError("concurrent must be used as @concurrent or @concurrent(max=...)")
    return mark(fn)


@dataclass(frozen=True)
class BatchLimits:
    """What `@batch` declared: the largest batch and the longest wait for it to fill."""

    max_size: int
    max_wait: float


def batch(fn: _F | None = None, *, max_size: int = 16,
          max_wait: float = 0.01) -> _F | Callable[[_F], _F]:
    """Declare that run() takes a batch: every parameter is a list (one value per
    request, in order) and run() returns a list of outputs in that same order.

    cogserve's addition to Cog's API. The server gathers up to `max_size` waiting
    predictions, waiting at most `max_wait` seconds for a batch to fill once a slot is
    free, and calls run() once for them; the HTTP API, the schema and validation stay
    per request (`list[str]` parameters are `str` inputs). The names follow the peers'
    (LitServe's `max_batch_size` / `batch_timeout`, Ray Serve's `@serve.batch(
    max_batch_size, batch_wait_timeout_s)`) in Cog's shorter style (`@concurrent(max=)`).

    An item of the returned list that is an exception object fails that request alone;
    an exception raised by run() fails every request of the batch. The limits are
    checked when the model loads (`loader.load_model`), where the error can name the file.
    """

    def mark(f: _F) -> _F:
        f._cogserve_batch = (max_size, max_wait)  # type: ignore[attr-defined]
        return f

    if fn is None:
        return mark
    return mark(fn)


def declared_batch(fn: Any) -> tuple[Any, Any] | None:
    """The raw `(max_size, max_wait)` of `@batch`, unchecked, or None."""
    declared: tuple[Any, Any] | None = getattr(_unwrap(fn), "_cogserve_batch", None)
    return declared


def is_streaming(fn: Any) -> bool:
    return bool(getattr(_unwrap(fn), "_cogserve_streaming", False))


def declared_concurrency(fn: Any) -> int | None:
    return getattr(_unwrap(fn), "_cogserve_concurrency", None)


def _unwrap(fn: Any) -> Any:
    fn = getattr(fn, "__func__", fn)
    while isinstance(fn, functools.partial):
        fn = fn.func
    return fn


def weights_argument(setup: Any) -> dict[str, Any]:
    """`setup(weights)` gets COG_WEIGHTS as a string, or None: what coglet hands over
    (cog.predictor.extract_setup_weights), whatever the parameter is annotated as, so a
    model that calls `requests.get(weights)` in setup() works unchanged."""
    import inspect

    try:
        param = inspect.signature(setup).parameters.get("weights")
    except (TypeError, ValueError):
        return {}
    if param is None:
        return {}
    return {"weights": cog_weights()}


def cog_weights() -> str | None:
    """COG_WEIGHTS, or None when unset or empty."""
    from cogserve.process.envvars import env_text

    return env_text("COG_WEIGHTS") or None
