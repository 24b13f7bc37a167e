"""Turn a reference like `run.py:Runner` into something callable, with clear errors.

Runs only in processes that are allowed to import the model (the worker, and the CLI's
`schema` command).
"""

from __future__ import annotations

import inspect
import math
import pathlib
import sys
from dataclasses import dataclass
from typing import Any

from cogserve.exceptions import DefinitionError
from cogserve.model.signature import read_signature
from cogserve.model.specs import Signature
from cogserve.sdk.model_import import import_ref
from cogserve.sdk.runner import (
    BasePredictor,
    BatchLimits,
    declared_batch,
    declared_concurrency,
    is_streaming,
    user_defines,
)
from cogserve.wire.protocol import Mode


@dataclass
class LoadedModel:
    """A model ready to run: its instance (or function), entry points and signature."""

    ref: str
    instance: Any  # the runner object, or None for a plain function
    run: Any  # the bound run/predict/train callable
    setup: Any  # bound setup() or None
    healthcheck: Any  # bound healthcheck() or None
    signature: Signature
    is_async: bool
    streaming: bool
    concurrency: int | None  # from @concurrent
    deprecated_predict: bool
    batch: BatchLimits | None = None  # from @batch: run() takes lists


def install_cog_alias() -> None:
    """Make `import cog` give cogserve's API inside this process only."""
    import cogserve.cog

    for name in [n for n in sys.modules if n == "cog" or n.startswith("cog.")]:
        del sys.modules[name]  # an installed cog imported already (sitecustomize, say)
    sys.modules["cog"] = cogserve.cog
    for sub in ("input", "model", "predictor", "types"):
        sys.modules[f"cog.{sub}"] = getattr(cogserve.cog, sub)
    if not any(isinstance(finder, _OldCogModules) for finder in sys.meta_path):
        sys.meta_path.append(_OldCogModules())


class _OldCogModules:
    """A meta-path finder for the `cog.*` modules older SDKs had (`cog.base_predictor`,
    ...): last on the path, it sees only imports nothing else found, and loads
    `cogserve.cog.legacy` (which makes them) only for such a `cog.*` import."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if not fullname.startswith("cog."):
            return None
        from cogserve.cog.legacy import OldModules

        return OldModules().find_spec(fullname, path, target)


def load_model(ref: str, directory: pathlib.Path, mode: Mode = Mode.PREDICT) -> LoadedModel:
    """Import and instantiate the runner; read its signature. Does not call setup()."""
    install_cog_alias()
    obj = import_ref(ref, directory)
    deprecated = False
    if inspect.isclass(obj):
        method_names = ("train",) if mode == Mode.TRAIN else ("run", "predict")
        fn_name = next((m for m in method_names if user_defines(obj, m)), None)
        if fn_name is None:
            want = "train()" if mode == Mode.TRAIN else "run() (or the deprecated predict())"
            raise DefinitionError(f"{_where(obj)}: class {obj.__name__} has no {want} method")
        try:
            instance = obj()
        except Exception as exc:
            raise DefinitionError(
                f"{_where(obj)}: creating {obj.__name__}() failed: {type(exc).__name__}: {exc}"
            ) from exc
        run = getattr(instance, fn_name)
        deprecated = fn_name == "predict" or isinstance(instance, BasePredictor)
        setup = getattr(instance, "setup", None)
        healthcheck = getattr(instance, "healthcheck", None)
    elif callable(obj):
        instance, run, setup, healthcheck = None, obj, None, None
    else:
        raise DefinitionError(f"{ref}: {obj!r} is neither a class nor a function")
    limits = batch_limits(run, mode)
    signature = read_signature(run, batched=limits is not None)
    is_async = inspect.iscoroutinefunction(run) or inspect.isasyncgenfunction(run)
    conc = declared_concurrency(run)
    if conc is not None and conc > 1 and not is_async:
        raise DefinitionError(
            f"{_where(run)}: @concurrent(max={conc}) needs an async run(); a sync run() "
            "serves one prediction at a time"
        )
    if deprecated:
        # Printed (not warnings.warn) so it names the model's file, not ours, on one line.
        print(f"{_where(obj)}: DeprecationWarning: BasePredictor and predict() are deprecated; "
              "rename them to BaseRunner and run()", file=sys.stderr, flush=True)
    return LoadedModel(
        ref=ref, instance=instance, run=run, setup=setup, healthcheck=healthcheck,
        signature=signature, is_async=is_async, streaming=is_streaming(run),
        concurrency=conc, deprecated_predict=deprecated, batch=limits,
    )


def batch_limits(run: Any, mode: Mode) -> BatchLimits | None:
    """`@batch`'s limits, checked: a clear error at load time, naming the file."""
    declared = declared_batch(run)
    if declared is None:
        return None
    max_size, max_wait = declared
    where = f"{_where(run)}: @batch"
    if mode is Mode.TRAIN:
        raise DefinitionError(f"{where}: only run() can take a batch; train() runs one "
                              "training at a time")
    if inspect.isasyncgenfunction(run) or inspect.isgeneratorfunction(run):
        raise DefinitionError(f"{where}: run() is a generator; a batched run() returns "
                              "the list of outputs (one per request), it cannot yield")
    if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
        raise DefinitionError(f"{where}(max_size={max_size!r}): max_size must be an integer "
                              "of at least 1 (the largest batch)")
    if isinstance(max_wait, bool) or not isinstance(max_wait, int | float) \
            or not math.isfinite(max_wait) or max_wait < 0:
        raise DefinitionError(f"{where}(max_wait={max_wait!r}): max_wait must be a number of "
                              "seconds of at least 0 (how long a batch may wait to fill)")
    return BatchLimits(max_size, float(max_wait))


def _where(obj: Any) -> str:
    try:
        file = inspect.getsourcefile(obj) or "?"
        line = inspect.getsourcelines(obj)[1]
        return f"{pathlib.Path(file).name}:{line}"
    except (OSError, TypeError):
        return getattr(obj, "__qualname__", repr(obj))
