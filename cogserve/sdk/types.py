"""The value types a model author annotates inputs and outputs with.

They are Cog 0.23.1's `cog.types` (names, signatures and behaviour: `Path.validate`,
`File.validate`, `URLFile`, `URLPath`, `get_filename`, ...) so that a model written for Cog
runs unmodified, plus cogserve's `Tensor`. The worker recognises them by class when it
reads a signature. Every model imports this module, so what only some need (urllib's HTTP
client: ~20 ms of a worker's start; mimetypes, tempfile) is imported where it is used.
"""

from __future__ import annotations

import dataclasses
import io
import os
import pathlib
import sys
import typing
from abc import abstractmethod
from collections.abc import Iterator
from typing import Any, TypeVar

from cogserve.wire.datatypes import Datatype, Family, named

# The file names Cog gives downloaded inputs: no NUL or "/", at most 200 bytes
FILENAME_ILLEGAL_CHARS = set("\u0000/")
FILENAME_MAX_LENGTH = 200


def _truncate_filename_bytes(filename: str, length: int) -> str:
    """Cut a name to `length` UTF-8 bytes, keeping its extension after a `~`."""
    if len(filename.encode()) <= length:
        return filename
    stem, ext = os.path.splitext(filename)
    room = length - len(ext.encode()) - 1
    return stem.encode()[:room].decode(errors="ignore") + "~" + ext


def get_filename(url: str) -> str:
    """The file name a URL's content gets: its path's last part (unquoted, shortened,
    made safe), or `file` plus the extension of a data: URL's media type."""
    import urllib.parse

    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "data":
        import mimetypes

        media = url[5:].partition(",")[0].split(";")[0].strip() or "text/plain"
        extension = mimetypes.guess_extension(media.lower())
        return "file" + extension if extension else "file"
    name = urllib.parse.unquote_plus(os.path.basename(parsed.path))
    name = _truncate_filename_bytes(name, FILENAME_MAX_LENGTH)
    for char in FILENAME_ILLEGAL_CHARS:
        name = name.replace(char, "_")
    return name


@dataclasses.dataclass(frozen=True)
class Secret:
    """A string that never shows itself in logs, reprs or responses."""

    secret_value: str | None = None

    def __repr__(self) -> str:
        return f"Secret({self})"

    def __str__(self) -> str:
        return "**********" if self.secret_value is not None else ""

    def get_secret_value(self) -> str | None:
        return self.secret_value


class URLFile(io.IOBase):
    """A read-only file object for an http(s) URL, opened on first use and standing in
    for the response from then on (attributes and reads go to it); it pickles as its URL.
    Cog exports it; models hand remote files on with it without downloading them first.
    """

    __slots__ = ("__target__", "__url__", "name")

    def __init__(self, url: str, filename: str | None = None) -> None:
        import urllib.parse

        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https"):
            raise ValueError("URLFile requires URL to conform to HTTP or HTTPS protocol")
        object.__setattr__(self, "name", filename or os.path.basename(parsed.path))
        object.__setattr__(self, "__url__", url)

    def __getstate__(self) -> dict[str, Any]:
        return {"name": object.__getattribute__(self, "name"),
                "url": object.__getattribute__(self, "__url__")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        object.__setattr__(self, "name", state["name"])
        object.__setattr__(self, "__url__", state["url"])

    @property
    def __wrapped__(self) -> Any:
        """The response, requested on first use (urllib: requests is not cogserve's)."""
        try:
            return object.__getattribute__(self, "__target__")
        except AttributeError:
            pass
        import urllib.request

        url = object.__getattribute__(self, "__url__")
        headers = {"User-Agent": agent} if (agent := os.environ.get("COG_USER_AGENT")) else {}
        response = urllib.request.urlopen(  # noqa: S310 - http(s) only, checked above
            urllib.request.Request(url, headers=headers), timeout=10)
        object.__setattr__(self, "__target__", response)
        return response

    def __getattr__(self, name: str) -> Any:
        if name in ("__target__", "__wrapped__", "__url__"):
            raise AttributeError(name)
        return getattr(self.__wrapped__, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(type(self), name):
            object.__setattr__(self, name, value)
        else:
            setattr(self.__wrapped__, name, value)

    def __delattr__(self, name: str) -> None:
        if hasattr(type(self), name):
            object.__delattr__(self, name)
        else:
            delattr(self.__wrapped__, name)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.__wrapped__)

    def __del__(self) -> None:
        try:
            object.__getattribute__(self, "__target__")
        except AttributeError:
            return  # never opened: nothing to close
        super().__del__()

    def __repr__(self) -> str:
        url = object.__getattribute__(self, "__url__")
        try:
            target = object.__getattribute__(self, "__target__")
        except AttributeError:
            return f"<{type(self).__name__} at 0x{id(self):x} for {url!r}>"
        return f"<{type(self).__name__} at 0x{id(self):x} wrapping {target!r}>"


class File(io.IOBase):
    """Deprecated file-like input (use Path): the model receives an open binary handle."""

    @classmethod
    def validate(cls, value: Any) -> io.IOBase:
        """A file object for `value`: itself if it is one, a data: URL's bytes, or a
        URLFile for an http(s) URL."""
        if isinstance(value, io.IOBase):
            return value
        import urllib.parse

        scheme = urllib.parse.urlparse(value).scheme
        if scheme == "data":
            import urllib.request

            with urllib.request.urlopen(value) as response:  # noqa: S310 - a data: URL
                return io.BytesIO(response.read())
        if scheme in ("http", "https"):
            return URLFile(value)
        raise ValueError(f"'{scheme}' is not a valid URL scheme. 'data', 'http', or 'https' "
                         "is supported.")


class URLPath(pathlib.PosixPath):
    """A Path standing for a URL (so isinstance(x, Path) holds); `convert()` fetches it
    to a local temporary file."""

    _path: Path | None

    def __new__(cls, *, source: str, filename: str, fileobj: io.IOBase) -> URLPath:
        return super().__new__(cls, filename)

    def __init__(self, *, source: str, filename: str, fileobj: io.IOBase) -> None:
        filename = _truncate_filename_bytes(filename, FILENAME_MAX_LENGTH)
        if sys.version_info >= (3, 12):
            super().__init__(filename)
        self.source = source
        self.filename = filename
        self.fileobj = fileobj
        self._path = None

    def convert(self) -> Path:
        if self._path is None:
            import shutil
            import tempfile

            with tempfile.NamedTemporaryFile(suffix=self.filename, delete=False) as dest:
                shutil.copyfileobj(self.fileobj, dest)
            self._path = Path(dest.name)
        return self._path

    def unlink(self, missing_ok: bool = False) -> None:
        if self._path is not None:
            self._path.unlink(missing_ok=missing_ok)

    def __str__(self) -> str:
        return self.source


class Path(pathlib.PosixPath):
    """A local file. Clients send a URL; the model receives the downloaded file."""

    @classmethod
    def validate(cls, value: Any) -> pathlib.Path:
        """A Path for `value`: itself if it is one, a URLPath (fetched by `convert()`)
        for an http(s) or data: URL, else a local path."""
        if isinstance(value, pathlib.Path):
            return value
        import urllib.parse

        if urllib.parse.urlparse(value).scheme in ("data", "http", "https"):
            return URLPath(source=value, filename=get_filename(value),
                           fileobj=File.validate(value))
        return Path(value)


class _OpaqueMarker:
    """The type of `Opaque`, a marker: `Annotated[T, Opaque]` declares a value cogserve
    neither inspects nor converts (an object in the schema, passed through as JSON)."""

    def __repr__(self) -> str:
        return "cog.Opaque"


Opaque = _OpaqueMarker()


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


Item = TypeVar("Item")


# typing's generics, not collections.abc's: Cog's classes have `Generic` among their bases
class ConcatenateIterator(typing.Iterator[Item]):  # noqa: UP035
    """An iterator of strings that a client should display concatenated (token streams)."""

    @abstractmethod
    def __next__(self) -> Item: ...


class AsyncConcatenateIterator(typing.AsyncIterator[Item]):  # noqa: UP035
    """The async twin of ConcatenateIterator."""

    @abstractmethod
    async def __anext__(self) -> Item: ...


class BaseModel:
    """Structured output: each subclass becomes a dataclass, so fields are declared by
    annotation (`auto_dataclass=False` leaves that to the class; other keywords go to
    `dataclass()`).

    Cog turns these into dataclasses rather than pydantic models; so does cogserve, so a
    model that never imports pydantic does not pay for it.
    """

    def __init_subclass__(cls, *, auto_dataclass: bool = True, init: bool = True,
                          **kwargs: object) -> None:
        super().__init_subclass__()
        primary = cls.__bases__[0]
        if not issubclass(primary, BaseModel):
            raise TypeError(f'Primary base class of "{cls.__name__}" must inherit from '
                            "BaseModel")
        if not auto_dataclass and primary is not BaseModel and vars(primary).get(
                "_auto_dataclass", False):
            raise ValueError(
                f'Primary base class of "{cls.__name__}" ("{primary.__name__}") has '
                f'auto_dataclass=True, but "{cls.__name__}" has auto_dataclass=False. This '
                "creates broken field inheritance.")
        for base in cls.__bases__[1:]:
            if dataclasses.is_dataclass(base):
                raise TypeError(f'Cannot mixin dataclass "{base.__name__}" while inheriting '
                                "from `BaseModel`")
        type.__setattr__(cls, "_auto_dataclass", auto_dataclass)
        if auto_dataclass:
            if not kwargs.get("kw_only"):
                from cogserve.sdk.pydantic_style import pydantic_style_fields

                pydantic_style_fields(cls)  # older SDKs' BaseModel was pydantic's
            dataclasses.dataclass(init=init, **kwargs)(cls)  # type: ignore[call-overload]
