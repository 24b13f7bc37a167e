"""The value types a model author annotates inputs and outputs with.

They mirror Cog's names so that a model written for Cog runs unmodified; the worker
recognises them by class when it reads a signature, so they carry no behaviour of
their own beyond what a model can observe (a local path, a redacted secret).
"""

from __future__ import annotations

import dataclasses
import io
import pathlib
from collections.abc import AsyncIterator, Iterator
from typing import Any, TypeVar

from cogserve.datatypes import Datatype, Family, named

T = TypeVar("T")


class Path(pathlib.PosixPath):
    """A local file. Clients send a URL; the model receives the downloaded file."""


class File(io.IOBase):
    """Deprecated file-like input: the model receives an open binary handle."""


class Secret:
    """A string that never shows itself in logs, reprs or responses."""

    __slots__ = ("_value",)

    def __init__(self, value: str | None = None) -> None:
        self._value = value

    def get_secret_value(self) -> str | None:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    def __str__(self) -> str:
        return "**********"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


class Opaque:
    """Marker for `Annotated[T, Opaque]`: the value is passed through unvalidated."""


# The numpy names a model may declare instead of a V2 datatype name
_NUMPY_NAMES = {f"{d.family}{8 * d.size}": d for d in Datatype
                if d.family in (Family.INT, Family.UINT, Family.FLOAT)} | {
    "bool": Datatype.BOOL, "bool_": Datatype.BOOL, "object_": Datatype.BYTES,
    "bytes_": Datatype.BYTES, "str_": Datatype.BYTES}


def tensor_datatype(value: Any) -> str:
    """"FP32", "float32", numpy.float32 or numpy.dtype("float32") -> "FP32"."""
    name = getattr(value, "__name__", None) or getattr(value, "name", None) or str(value)
    found = named(name.upper()) or _NUMPY_NAMES.get(name)
    if found is None:
        raise TypeError(f"{value!r} is not a tensor datatype; use one of {', '.join(Datatype)}")
    return found.value


class Tensor:
    """An n-dimensional array: run() receives a numpy.ndarray (and may return one).

    `Tensor["FP32", (-1, 3)]` declares the element type and the shape (-1 for a
    variable dimension), so the V2 protocol can publish them in model metadata and
    check requests before the model sees them; real tensor models need that contract.
    numpy is imported by the worker only when a model declares a tensor.
    """

    datatype: str | None = None
    shape: tuple[int, ...] | None = None

    def __class_getitem__(cls, params: Any) -> type[Tensor]:
        datatype, shape = params if isinstance(params, tuple) else (params, None)
        dt = tensor_datatype(datatype)
        dims = None if shape is None else tuple(int(d) for d in (
            shape if isinstance(shape, tuple | list) else (shape,)))
        if dims is not None and any(d < -1 for d in dims):
            raise TypeError(f"tensor shape {dims}: dimensions are sizes or -1 (variable)")
        name = f"Tensor[{dt}, {list(dims) if dims is not None else '...'}]"
        return type(name, (Tensor,), {"datatype": dt, "shape": dims})


class ConcatenateIterator(Iterator[T]):
    """An iterator of strings that a client should display concatenated (token streams)."""

    def __next__(self) -> T:  # pragma: no cover - only used as an annotation
        raise StopIteration


class AsyncConcatenateIterator(AsyncIterator[T]):
    """The async twin of ConcatenateIterator."""

    async def __anext__(self) -> T:  # pragma: no cover - only used as an annotation
        raise StopAsyncIteration


class BaseModel:
    """Structured output: subclasses become dataclasses, so fields are declared by annotation.

    Cog turns these into dataclasses rather than pydantic models; we do the same so a
    model that never imports pydantic does not pay for it.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclasses.dataclass(cls)
