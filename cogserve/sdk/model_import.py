"""Importing the module and object a model reference (`run.py:Runner`) names, with errors
that say where and what to do: the loader's first step, and `cog.predictor`'s
load_predictor_from_ref. Apart from the loader so that the `cog` package can use it
without importing the loader, which imports `cog`."""

from __future__ import annotations

import importlib
import importlib.util
import pathlib
import sys
from typing import Any

from cogserve.exceptions import DefinitionError


def import_ref(ref: str, directory: pathlib.Path) -> Any:
    """Import the object a `FILE.py:NAME` or `package.module:NAME` reference names."""
    target, sep, name = ref.rpartition(":")
    if not sep or not target or not name:
        raise DefinitionError(f"{ref!r} is not a model reference: expected FILE.py:NAME")
    module = import_target(target, directory, ref)
    if not hasattr(module, name):
        raise DefinitionError(f"{target}: no class or function named {name!r} in it (the model "
                              f"reference is {ref!r})")
    return getattr(module, name)


def import_target(target: str, directory: pathlib.Path, ref: str) -> Any:
    """Import the module of a reference: a file (relative to `directory`) or a dotted name."""
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
    if not target.endswith(".py"):
        try:
            return importlib.import_module(target)
        except Exception as exc:
            raise DefinitionError(_import_failure(target, exc, directory)) from exc
    path = (directory / target).resolve()
    if not path.is_file():
        raise DefinitionError(f"{target}: no such file in {directory} (the model reference "
                              f"is {ref!r})")
    module_name = path.stem
    module = sys.modules.get(module_name)
    if module is not None and getattr(module, "__file__", None) != str(path):
        # `types.py`, `queue.py`: never replace a stdlib module
        module_name = f"_cogserve_model_{module_name}"
        module = sys.modules.get(module_name)
    # run: and train: often name the same file; import it once, so both see one
    # module (and the same class, when it is the same class)
    if module is None or getattr(module, "__file__", None) != str(path):
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise DefinitionError(_import_failure(target, exc, directory)) from exc
    return module


def _import_failure(target: str, exc: BaseException, directory: pathlib.Path) -> str:
    import traceback  # only for a model that fails to import (~1 ms of a worker's start)

    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if "importlib" not in f.filename]
    # the model's own line, else the last one (a package the model imported)
    ours = [f for f in frames if pathlib.Path(f.filename).resolve().is_relative_to(
        directory.resolve())]
    shown = ours or frames
    line = f"{pathlib.Path(shown[-1].filename).name}:{shown[-1].lineno}: " if shown else ""
    if isinstance(exc, SyntaxError):
        line = f"{pathlib.Path(exc.filename or target).name}:{exc.lineno}: "
    message = f"{line}importing {target} failed: {type(exc).__name__}: {exc}"
    from cogserve.sdk.import_hints import missing_module_hint, old_sdk_hint

    old_sdk = old_sdk_hint(exc)
    if old_sdk:
        message += f"; {old_sdk}"
    elif isinstance(exc, ModuleNotFoundError) and exc.name:
        message += f"; {missing_module_hint(directory, exc.name)}"
    return message
