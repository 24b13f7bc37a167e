"""`cog.predictor`: the classes a model subclasses, and Cog's helpers for loading one."""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

from cogserve.sdk.runner import BasePredictor, BaseRunner
from cogserve.sdk.runner import cog_weights as _cog_weights
from cogserve.sdk.runner import weights_argument as _weights_argument
from cogserve.sdk.types import Path

__all__ = ["BasePredictor", "BaseRunner", "Path", "extract_setup_weights",
           "has_setup_weights", "load_predictor_from_ref"]


def load_predictor_from_ref(ref: str) -> BaseRunner | Callable[..., Any]:
    """The runner a `file.py:Name` reference names (relative to the working directory),
    instantiated if it is a class; without `:Name`, its `Runner`, else its `Predictor`."""
    from cogserve.exceptions import DefinitionError
    from cogserve.sdk.model_import import import_target

    target, sep, name = ref.partition(":")
    module = import_target(target, pathlib.Path.cwd(), ref)
    names = [name] if sep else [n for n in ("Runner", "Predictor") if hasattr(module, n)]
    if not names or not hasattr(module, names[0]):
        wanted = repr(name) if sep else "Runner or Predictor"
        raise DefinitionError(f"{target}: no {wanted} in it (the reference is {ref!r})")
    found = getattr(module, names[0])
    return found() if isinstance(found, type) else found  # type: ignore[no-any-return]


def has_setup_weights(predictor: BaseRunner) -> bool:
    """Whether the runner's setup() takes `weights`."""

    return bool(_weights_argument(getattr(predictor, "setup", None)))


def extract_setup_weights(predictor: BaseRunner) -> Path | str | None:
    """What setup(weights) gets: COG_WEIGHTS, or None."""
    return _cog_weights()
