"""The V2 tensor datatypes: their wire names, element sizes and families, once.

A module of its own, stdlib only, because three sides need the same list and must not
pull in each other's imports: model code (`cogserve.sdk.types.Tensor`, the SDK side, which
stays light), the worker (which maps each datatype to a numpy dtype) and the parent's
V2 codec (which packs JSON numbers with the `array` module).
"""

from __future__ import annotations

from enum import StrEnum


class Family(StrEnum):
    """What a V2 datatype's elements are, whatever their size."""

    BOOL = "bool"
    INT = "int"
    UINT = "uint"
    FLOAT = "float"
    BYTES = "bytes"


class Datatype(StrEnum):
    """A V2 datatype: the member is its wire name (a str, so it goes into JSON and
    messages as it is), and carries how its elements are packed."""

    size: int  # bytes per element; 0 for BYTES (length-prefixed)
    code: str  # array typecode ("e" means struct's half float; "?" bool; "" bytes)
    family: Family

    def __new__(cls, name: str, size: int, code: str, family: Family) -> Datatype:
        member = str.__new__(cls, name)
        member._value_ = name
        member.size = size
        member.code = code
        member.family = family
        return member

    BOOL = ("BOOL", 1, "?", Family.BOOL)
    UINT8 = ("UINT8", 1, "B", Family.UINT)
    UINT16 = ("UINT16", 2, "H", Family.UINT)
    UINT32 = ("UINT32", 4, "I", Family.UINT)
    UINT64 = ("UINT64", 8, "Q", Family.UINT)
    INT8 = ("INT8", 1, "b", Family.INT)
    INT16 = ("INT16", 2, "h", Family.INT)
    INT32 = ("INT32", 4, "i", Family.INT)
    INT64 = ("INT64", 8, "q", Family.INT)
    FP16 = ("FP16", 2, "e", Family.FLOAT)
    FP32 = ("FP32", 4, "f", Family.FLOAT)
    FP64 = ("FP64", 8, "d", Family.FLOAT)
    BYTES = ("BYTES", 0, "", Family.BYTES)


_BY_NAME: dict[str, Datatype] = {d.value: d for d in Datatype}  # a constant table


def named(name: str) -> Datatype | None:
    """The datatype with this exact wire name ("FP32"), or None."""
    return _BY_NAME.get(name)
