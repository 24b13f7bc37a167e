"""The `cog` package as a model sees it inside cogserve's worker (`import cog`).

It offers every name Cog 0.23.1's `cog` package has (`dir(cog)`), its submodules
(`cog.types`, `cog.input`, `cog.model`, `cog.predictor`) and the deprecated names
published models still import (`emit_metric`, `ExperimentalFeatureWarning`), each of
which prints Cog's deprecation line to stderr (the logs) once, on first use.
`cog.__version__` is the Cog version cogserve is compatible with, since models log
and check it; `cogserve.__version__` stays cogserve's own.
"""

import sys as _sys
from collections.abc import Callable
from typing import TypeVar, overload

from cogserve.cog import input, model, predictor, types
from cogserve.exceptions import CancelationException
from cogserve.runner import concurrent, streaming
from cogserve.scope import current_scope
from cogserve.types import Opaque, Tensor

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


class _ExperimentalFeatureWarning(FutureWarning):
    """Deprecated in Cog: kept so `warnings.filterwarnings(..., ExperimentalFeatureWarning)`
    in published models still imports."""


def _emit_metric(name: str, value: float) -> None:
    current_scope().record_metric(name, value)


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
    raise AttributeError(f"module 'cog' has no attribute {name!r}")


__all__ = [
    "__version__",
    "AsyncConcatenateIterator",
    "BaseModel",
    "BasePredictor",
    "BaseRunner",
    "CancelationException",
    "ConcatenateIterator",
    "FieldInfo",
    "File",
    "Input",
    "Opaque",
    "Path",
    "Secret",
    "Tensor",
    "URLFile",
    "URLPath",
    "concurrent",
    "current_scope",
    "input",
    "model",
    "overload",
    "predictor",
    "streaming",
    "types",
]
