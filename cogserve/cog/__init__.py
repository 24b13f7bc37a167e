"""The `cog` package as a model sees it inside cogserve's worker (`import cog`).

It is Cog 0.23.1's public API: every name of `cog` and of its submodules (`cog.types`,
`cog.input`, `cog.model`, `cog.predictor`) with Cog's call signatures and class members
(`tests/test_sdk_surface.py` compares them with the reference wheel's), plus
cogserve's additions (`Tensor`). The deprecated names published models still import
(`emit_metric`, `ExperimentalFeatureWarning`) print Cog's deprecation line to stderr (the
logs) once, on first use. `cog.__version__` is the Cog version cogserve follows, since
models log and check it; `cogserve.__version__` stays cogserve's own.
"""

import sys as _sys
from collections.abc import Callable
from typing import TypeVar
from typing import overload as overload  # in Cog's `dir(cog)`, as Callable and TypeVar

# the submodules, as attributes of the package (`cog.types.Path`)
from cogserve.cog import input as input
from cogserve.cog import model as model
from cogserve.cog import predictor as predictor
from cogserve.cog import types as types
from cogserve.exceptions import CancelationException
from cogserve.sdk.runner import batch, concurrent, streaming  # batch: cogserve's addition
from cogserve.sdk.scope import current_scope as _current_scope
from cogserve.sdk.types import Opaque, Tensor

from .input import FieldInfo, Input
from .model import BaseModel
from .predictor import BasePredictor, BaseRunner
from .types import (
    AsyncConcatenateIterator,
    ConcatenateIterator,
    File,
    Path,
    Secret,
    URLFile,
    URLPath,
)

__version__ = "0.23.1"  # the Cog release whose API and behaviour cogserve follows

_F = TypeVar("_F", bound=Callable[..., object])


def current_scope() -> object:
    """The running prediction's scope (`record_metric`, `metrics`, `context`); a no-op
    scope outside a prediction."""
    return _current_scope()


class _ExperimentalFeatureWarning(FutureWarning):
    """Deprecated in Cog: kept so `warnings.filterwarnings(..., ExperimentalFeatureWarning)`
    in published models still imports."""


def _emit_metric(name: str, value: float) -> None:
    _current_scope().record_metric(name, value)


# name -> (Cog's deprecation line, the object)
_DEPRECATED: dict[str, tuple[str, object]] = {
    "ExperimentalFeatureWarning": (
        "cog: ExperimentalFeatureWarning is deprecated and will be removed in a future "
        "release. Remove `ExperimentalFeatureWarning` from your imports and any associated "
        "`warnings.filterwarnings(...)` calls.", _ExperimentalFeatureWarning),
    "emit_metric": (
        "cog: emit_metric() is deprecated and will be removed in a future release. Use "
        "current_scope().record_metric(name, value) instead.", _emit_metric),
}


def __getattr__(name: str) -> object:
    """A deprecated name prints its line once, then is an ordinary module attribute."""
    if name in _DEPRECATED:
        message, value = _DEPRECATED[name]
        print(message, file=_sys.stderr)
        globals()[name] = value
        return value
    if name.startswith("__"):  # the import system's questions (`__path__`, ...)
        raise AttributeError(f"module 'cog' has no attribute {name!r}")
    from cogserve.cog.legacy import old_attribute  # older SDKs' names, only when asked

    return old_attribute("cog", name)


__all__ = [
    "__version__",
    "AsyncConcatenateIterator",
    "BaseModel",
    "BasePredictor",
    "BaseRunner",
    "CancelationException",
    "ConcatenateIterator",
    "ExperimentalFeatureWarning",
    "FieldInfo",
    "File",
    "Input",
    "Opaque",
    "Path",
    "Secret",
    "URLFile",
    "URLPath",
    "concurrent",
    "current_scope",
    "emit_metric",
    "streaming",
    # cogserve's additions
    "Tensor",
    "batch",
]
