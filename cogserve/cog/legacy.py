"""Names of older Cog SDKs that Cog has since removed, still importable by the models that
use them, each with one deprecation line naming its replacement.

Replicate hosts thousands of models built with Cog 0.8 to 0.16 (the pydantic-based SDK);
Cog 0.17 rewrote the SDK and dropped these names, so Cog 0.23.1 refuses those models at
import. cogserve serves them: an old name resolves to what replaced it, and the first use
of each prints `cog: NAME is deprecated (an older Cog SDK's name): use REPLACEMENT` to
stderr, which is the setup logs. Nothing here is loaded until a model asks for an old name.

- `OLD_NAMES`: attributes of modules that still exist (`cog.types.Weights`), read by those
  modules' `__getattr__`.
- `OLD_MODULES`: modules that no longer exist (`cog.base_predictor`, `cog.server.scope`),
  made on import by `OldModules`, which the loader's finder calls on a `cog.*` import
  nothing else found.
A `cog.BaseModel` written by pydantic's rules is `cogserve/sdk/pydantic_style.py`'s.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any


def _weights() -> object:
    from cogserve.sdk.types import File, Path

    return File | Path | str  # its old definition: Union[File, Path, str]


def _get_filename_from_urlopen(resp: Any) -> str:
    """The name of a urlopen() response's file: its final URL's last part."""
    from cogserve.sdk.types import get_filename

    return get_filename(resp.geturl())


def _attr(module: str, name: str) -> Callable[[], object]:
    return lambda: getattr(importlib.import_module(module), name)


# (replacement, the value)
Entry = tuple[str, Callable[[], object]]

# module -> old name -> entry
OLD_NAMES: dict[str, dict[str, Entry]] = {
    "cog.types": {
        "Weights": ("`Path | str` (setup(weights) gets COG_WEIGHTS as a str)", _weights),
        "Input": ("`from cog import Input`", _attr("cogserve.sdk.runner", "Input")),
        "ExperimentalFeatureWarning": (
            "nothing: remove it and its `warnings.filterwarnings(...)` calls",
            _attr("cogserve.cog", "ExperimentalFeatureWarning")),
        "get_filename_from_urlopen": ("`cog.types.get_filename(response.geturl())`",
                                      lambda: _get_filename_from_urlopen),
    },
}

# old module -> (replacement, or None for a package only there for its modules; its names)
OLD_MODULES: dict[str, tuple[str | None, dict[str, Callable[[], object]]]] = {
    "cog.base_predictor": ("`from cog import BasePredictor` (or BaseRunner)", {
        "BasePredictor": _attr("cogserve.sdk.runner", "BasePredictor")}),
    "cog.server": (None, {}),
    "cog.server.scope": ("`from cog import current_scope`", {
        "current_scope": _attr("cogserve.cog", "current_scope"),
        "emit_metric": _attr("cogserve.cog", "_emit_metric")}),
    "cog.server.exceptions": ("`from cog import CancelationException`", {
        "CancelationException": _attr("cogserve.exceptions", "CancelationException")}),
}

_warned: set[str] = set()


def warn(old: str, replacement: str) -> None:
    """The deprecation line, once per old name in this process."""
    once(old, f"cog: {old} is deprecated (an older Cog SDK's name, removed in Cog 0.17): "
              f"use {replacement}")


def once(key: str, line: str) -> None:
    if key not in _warned:
        _warned.add(key)
        print(line, file=sys.stderr, flush=True)


def old_attribute(module: str, name: str) -> object:
    """An old name of `module` (its `__getattr__` calls this), or AttributeError."""
    entry = OLD_NAMES.get(module, {}).get(name)
    if entry is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    replacement, value = entry
    warn(f"{module}.{name}", replacement)
    return value()


class OldModules:
    """Makes the modules of OLD_MODULES when a model imports them: a meta-path finder and
    its loader (by protocol: importlib.abc would cost a worker ~10 ms to import)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in OLD_MODULES:
            return None
        is_package = any(other.startswith(fullname + ".") for other in OLD_MODULES)
        return importlib.machinery.ModuleSpec(fullname, self,  # type: ignore[arg-type]
                                              is_package=is_package)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        replacement, names = OLD_MODULES[module.__name__]
        if replacement is not None:
            warn(module.__name__, replacement)
        for name, value in names.items():
            setattr(module, name, value())
