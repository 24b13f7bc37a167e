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
  made on import by `OldModules`, a finder `install_cog_alias` puts on `sys.meta_path`.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any


def _weights() -> object:
    from cogserve.types import File, Path

    return File | Path | str  # its old definition: Union[File, Path, str]


def _get_filename_from_urlopen(resp: Any) -> str:
    """The name of a urlopen() response's file: its final URL's last part."""
    from cogserve.types import get_filename

    return get_filename(resp.geturl())


def _attr(module: str, name: str) -> Callable[[], object]:
    return lambda: getattr(importlib.import_module(module), name)


# (replacement, the value)
Entry = tuple[str, Callable[[], object]]

# module -> old name -> entry
OLD_NAMES: dict[str, dict[str, Entry]] = {
    "cog.types": {
        "Weights": ("`Path | str` (setup(weights) gets COG_WEIGHTS as a str)", _weights),
        "Input": ("`from cog import Input`", _attr("cogserve.runner", "Input")),
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
        "BasePredictor": _attr("cogserve.runner", "BasePredictor")}),
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


def pydantic_style_fields(cls: type) -> None:
    """Make a BaseModel written for the older SDKs' (pydantic's) rules a valid dataclass.

    Under pydantic an `Optional` field without a default is None when left out (pydantic
    1, which those SDKs used), a field without a default may follow one with a default,
    and `Field(...)` gives the default. As a dataclass the first raises at construction
    and the others when the class is made. So: an Optional field without default gets
    None, `Field(default=...)` becomes the default, and a field without a default after
    one with a default becomes keyword-only (as pydantic fields always are). A class that
    follows the dataclass rules is left as it is; one that needed a change logs one line.
    """
    own = cls.__dict__.get("__annotations__", {})
    if not own:
        return
    import dataclasses
    import typing

    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - an annotation that does not resolve: leave it be
        return
    seen_default = any(
        f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        for base in cls.__mro__[1:] if dataclasses.is_dataclass(base)
        for f in dataclasses.fields(base))
    changed: list[str] = []
    for name in own:
        hint = hints.get(name)
        if typing.get_origin(hint) is typing.ClassVar:
            continue
        value = cls.__dict__.get(name, dataclasses.MISSING)
        if type(value).__module__.startswith("pydantic") and hasattr(value, "default"):
            value = _from_pydantic_field(value)
            if value is dataclasses.MISSING:
                type.__delattr__(cls, name)
            else:
                type.__setattr__(cls, name, value)
            changed.append(name)
        has_default = value is not dataclasses.MISSING and not (
            isinstance(value, dataclasses.Field) and value.default is dataclasses.MISSING
            and value.default_factory is dataclasses.MISSING)
        if not has_default and _optional(hint):
            type.__setattr__(cls, name, None)
            has_default = True
            changed.append(name)
        elif not has_default and seen_default:
            type.__setattr__(cls, name, dataclasses.field(kw_only=True))
            changed.append(name)
        seen_default = seen_default or has_default
    if changed:
        once(f"{cls.__module__}.{cls.__qualname__}",
             f"cog: {cls.__name__}({', '.join(changed)}) follows "
             "pydantic's BaseModel rules, as older Cog SDKs' BaseModel was pydantic's; Cog "
             "0.17+ makes it a dataclass: give those fields plain defaults in dataclass order "
             "(cogserve applies pydantic's: an Optional field defaults to None, Field() gives "
             "the default, a field after a default is keyword-only)")


def _optional(hint: object) -> bool:
    import types as _types
    import typing

    return typing.get_origin(hint) in (typing.Union, _types.UnionType) and type(None) in (
        typing.get_args(hint))


def _from_pydantic_field(info: Any) -> Any:
    """A pydantic `Field(...)` as a dataclass default."""
    import dataclasses

    factory = getattr(info, "default_factory", None)
    if factory is not None:
        return dataclasses.field(default_factory=factory)
    default = info.default
    if default is Ellipsis or type(default).__name__ == "PydanticUndefinedType":
        return dataclasses.MISSING
    return default
