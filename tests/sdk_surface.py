"""Print the public surface of the `cog` package importable here, as JSON.

Run by `tests/test_sdk_surface.py` twice: with the reference wheel's interpreter (the
real `cog`) and with cogserve's (`--cogserve` installs the `cog` alias a worker has), so
the two surfaces are compared name by name. Stdlib only: the reference venv has nothing
else of ours.

What counts as the surface of a module: every name in its `__all__`, and every name
without a leading underscore that is not a module and was defined in `cog` itself (or, for
ours, in `cogserve`): a function's or class's `__module__` says where it was defined; a
constant (no `__module__`) counts. So `typing.Any` imported into `cog.types` is not part of
its surface, but `cog.types.FILENAME_MAX_LENGTH` is. For each name: its kind, its call
signature (parameter names, kinds, defaults, annotations, each written the same way
whichever spelling of a type was used), and for a class its bases by name, its public
members (each with its kind and signature) and its dataclass fields.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import json
import sys
import types
import typing
from typing import Any

MODULES = ("cog", "cog.types", "cog.input", "cog.model", "cog.predictor")
OURS = ("cog", "cogserve", "coglet")  # where a public name may have been defined


def canon(annotation: Any) -> str:
    """One spelling of a type: `Optional[Union[int, float]]` and `int | float | None` are
    `Union[NoneType, float, int]`, `List[str]` is `list[str]`, a class is its name."""
    if annotation is inspect.Parameter.empty:
        return ""
    if isinstance(annotation, str):
        return annotation
    if annotation is type(None) or annotation is None:
        return "NoneType"
    if isinstance(annotation, typing.TypeVar):
        return f"~{annotation.__name__}"
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return f"Union[{', '.join(sorted(canon(a) for a in args))}]"
    if origin is not None:
        name = getattr(origin, "__name__", None) or str(origin)
        if not args:
            return name
        shown = ["[" + ", ".join(canon(x) for x in a) + "]" if isinstance(a, list) else canon(a)
                 for a in args]
        return f"{name}[{', '.join(shown)}]"
    if annotation is typing.Any:
        return "Any"
    name = getattr(annotation, "__qualname__", None)
    return str(name) if name else repr(annotation)


def shown_default(value: Any) -> str:
    if value is inspect.Parameter.empty:
        return ""
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if callable(value) and hasattr(value, "__qualname__"):
        return value.__qualname__
    return repr(value)


def signature(obj: Any) -> dict[str, Any] | None:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    try:  # `from __future__ import annotations` leaves strings: evaluate them
        sig = inspect.signature(obj, eval_str=True)
    except Exception:  # noqa: BLE001 - a name only imported for type checkers: keep strings
        pass
    return {
        "parameters": [[p.name, p.kind.name, shown_default(p.default), canon(p.annotation)]
                       for p in sig.parameters.values()],
        "returns": canon(sig.return_annotation),
    }


def member(cls: type, name: str) -> dict[str, Any]:
    raw = inspect.getattr_static(cls, name)
    if isinstance(raw, staticmethod):
        return {"kind": "staticmethod", "signature": signature(raw.__func__)}
    if isinstance(raw, classmethod):
        return {"kind": "classmethod", "signature": signature(raw.__func__)}
    if isinstance(raw, property):
        return {"kind": "property"}
    if inspect.isfunction(raw):
        return {"kind": "method", "signature": signature(raw)}
    if callable(raw) and not isinstance(raw, type):
        return {"kind": "method"}  # a builtin's method (pathlib, io): no Python signature
    return {"kind": "attribute", "type": type(raw).__name__}


def describe(obj: Any) -> dict[str, Any]:
    if isinstance(obj, type):
        members = sorted(n for n in dir(obj) if not n.startswith("_"))
        entry: dict[str, Any] = {
            "kind": "class",
            "bases": [c.__name__ for c in obj.__mro__[1:]],
            "signature": signature(obj),
            "members": {n: member(obj, n) for n in members},
        }
        if dataclasses.is_dataclass(obj):
            params = getattr(obj, "__dataclass_params__", None)
            try:
                hints = typing.get_type_hints(obj)
            except Exception:  # noqa: BLE001 - as for signatures
                hints = {}
            entry["dataclass"] = {
                "frozen": bool(getattr(params, "frozen", False)),
                "fields": [[f.name, canon(hints.get(f.name, f.type)), shown_default(f.default)]
                           for f in dataclasses.fields(obj)],
            }
        return entry
    if callable(obj):
        return {"kind": "function", "signature": signature(obj)}
    return {"kind": "value", "type": type(obj).__name__}


def public_names(module: types.ModuleType) -> list[str]:
    names = set(getattr(module, "__all__", ()))
    for name, value in vars(module).items():
        if name.startswith("_") or isinstance(value, types.ModuleType):
            continue
        where = getattr(value, "__module__", None)
        if where is None or where.split(".")[0] in OURS:
            names.add(name)
    return sorted(names)


def surface() -> dict[str, Any]:
    result: dict[str, Any] = {}
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        result[module_name] = {name: describe(getattr(module, name))
                               for name in public_names(module)}
    return result


if __name__ == "__main__":
    if "--cogserve" in sys.argv:
        from cogserve.model.loader import install_cog_alias

        install_cog_alias()
    json.dump(surface(), sys.stdout, indent=1, sort_keys=True)
