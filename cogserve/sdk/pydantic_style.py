"""A `cog.BaseModel` written by pydantic's rules, made a valid dataclass.

Cog 0.8 to 0.16 made `cog.BaseModel` pydantic's BaseModel; Cog 0.17 made it a dataclass,
whose rules refuse some of those classes (a field without a default after one with a
default) or their construction (an Optional field left out). Called by
`BaseModel.__init_subclass__` (cogserve/sdk/types.py) before the dataclass is made.
"""

from __future__ import annotations

import sys
from typing import Any


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
    if changed:  # once: a class is made once
        print(f"cog: {cls.__name__}({', '.join(changed)}) follows pydantic's BaseModel "
              "rules, as older Cog SDKs' BaseModel was pydantic's; Cog 0.17+ makes it a "
              "dataclass: give those fields plain defaults in dataclass order (cogserve "
              "applies pydantic's: an Optional field defaults to None, Field() gives the "
              "default, a field after a default is keyword-only)", file=sys.stderr, flush=True)


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
