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
