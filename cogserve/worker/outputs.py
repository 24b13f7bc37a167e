"""Turn what run() returns (or yields) into JSON, checking it against the declared type.

Files are not read here: each becomes a marker `{"__cogserve_file__": path}` that the
parent replaces with a data URL or an upload URL. A value that does not match the
return annotation fails the prediction with a message naming where it went wrong,
instead of sending the client something the schema does not promise.
"""

from __future__ import annotations

import dataclasses
import io
import os
import pathlib
from typing import Any

from cogserve.model.specs import TypeKind, TypeSpec
from cogserve.wire.protocol import FILE_KEY
from cogserve.worker import handover

# JSON carries what orjson can write: nesting below its limit of 254 levels (the output
# sits inside the envelope, so a little less), integers in the signed/unsigned 64-bit range.
MAX_DEPTH = 200
INT_MIN, INT_MAX = -(1 << 63), (1 << 64) - 1


class OutputTypeError(TypeError):
    pass


def encode_output(value: Any, t: TypeSpec) -> dict[str, Any]:
    """The `output` part of an IPC message; `files` tells the parent to look for markers."""
    if value is None:  # Cog lets run() return None whatever it declares: `"output": null`
        return {"output": None}
    found: list[str] = []
    try:
        encoded = encode(value, t, "output", found)
    except OutputTypeError as exc:
        raise OutputTypeError(f"run() returned a value that does not match its declared "
                              f"output type {t.describe()}: {exc}") from None
    if found:
        return {"output": encoded, "files": True}
    return {"output": encoded}


def encode(value: Any, t: TypeSpec, where: str = "output",
           found: list[str] | None = None) -> Any:
    if found is None:
        found = []
    kind = t.kind
    if value is None:
        if t.optional or kind == TypeKind.ANY:
            return None
        raise OutputTypeError(f"{where}: expected {t.describe()}, got None")
    if kind == TypeKind.STR:
        if type(value) is str:
            return value
        if isinstance(value, str):
            return str(value)
    elif kind == TypeKind.INT:
        if type(value) is int:
            return _int_in_range(value, where)
        if isinstance(value, int) and not isinstance(value, bool):
            return _int_in_range(int(value), where)
        if _numpy_scalar(value, "i"):
            return int(value)
    elif kind == TypeKind.FLOAT:
        if type(value) is float:
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if _numpy_scalar(value, "fi"):
            return float(value)
    elif kind == TypeKind.BOOL:
        if isinstance(value, bool):
            return value
    elif kind in (TypeKind.PATH, TypeKind.FILE):
        if isinstance(value, str | os.PathLike):
            path = pathlib.Path(value)
            if not path.is_file():
                raise OutputTypeError(f"{where}: file {str(path)!r} does not exist")
            found.append(str(path))
            return {FILE_KEY: str(path.resolve())}
        if isinstance(value, io.IOBase) or hasattr(value, "read"):
            found.append("file")
            return {FILE_KEY: handover.spill_output(value)}
    elif kind == TypeKind.SECRET:
        return str(value)
    elif kind == TypeKind.LIST:
        if isinstance(value, list | tuple):
            item = t.item or TypeSpec(TypeKind.ANY)
            return [encode(v, item, f"{where}[{i}]", found)
                    for i, v in enumerate(value)]
    elif kind == TypeKind.OBJECT:
        return _encode_object(value, t, where, found)
    elif kind == TypeKind.TENSOR:
        # numpy: only for models that declare tensors
        from cogserve.worker.tensors import from_array

        try:
            return from_array(value, t.tensor, where)
        except TypeError as exc:
            raise OutputTypeError(str(exc)) from None
    elif kind == TypeKind.UNION:
        for member in t.members:
            try:
                return encode(value, member, where, found)
            except OutputTypeError:
                continue
    elif kind in (TypeKind.ANY, TypeKind.LITERAL):
        return _jsonable(value, where, found)
    raise OutputTypeError(
        f"{where}: expected {t.describe()}, got {type(value).__name__} ({_short(value)})"
    )


def _encode_object(value: Any, t: TypeSpec, where: str,
                   found: list[str]) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        data = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    elif hasattr(value, "model_dump"):
        data = {name: getattr(value, name) for name in type(value).model_fields}
    elif isinstance(value, dict):
        data = value
    else:
        raise OutputTypeError(
            f"{where}: expected {t.describe()}, got {type(value).__name__} ({_short(value)})"
        )
    out = {}
    for name, ft, required in t.fields:
        if name not in data:
            if required:
                raise OutputTypeError(f"{where}.{name}: required field is missing")
            continue  # a TypedDict's NotRequired key, left out
        out[name] = encode(data[name], ft, f"{where}.{name}", found)
    return out


def _jsonable(value: Any, where: str, found: list[str], depth: int = 0) -> Any:
    if value is None or isinstance(value, str | float | bool):
        return value
    if isinstance(value, int):
        return _int_in_range(value, where)
    if depth >= MAX_DEPTH:  # else a RecursionError here or in orjson, with no hint why
        where = where if len(where) <= 60 else where[:57] + "..."
        raise OutputTypeError(f"{where}: nested more than {MAX_DEPTH} levels deep (or the "
                              "value contains itself); JSON output cannot hold it")
    depth += 1
    if isinstance(value, dict):
        return {str(k): _jsonable(v, f"{where}.{k}", found, depth)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v, f"{where}[{i}]", found, depth)
                for i, v in enumerate(value)]
    if isinstance(value, pathlib.Path):
        found.append(str(value))
        return {FILE_KEY: str(value.resolve())}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable(dataclasses.asdict(value), where, found, depth)
    if hasattr(value, "model_dump"):
        return _jsonable(value.model_dump(), where, found, depth)
    if hasattr(value, "tolist"):
        return value.tolist()
    raise OutputTypeError(f"{where}: {type(value).__name__} is not JSON-serialisable")


def _int_in_range(value: int, where: str) -> int:
    if INT_MIN <= value <= INT_MAX:
        return value
    raise OutputTypeError(f"{where}: the integer {_short(value)} is outside the 64-bit range "
                          "JSON output supports; return it as a str or float")


def _numpy_scalar(value: Any, kinds: str) -> bool:
    dtype = getattr(value, "dtype", None)
    return dtype is not None and getattr(value, "shape", None) == () and dtype.kind in kinds


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int of more than 4300 digits
        return f"<{type(value).__name__} too large to print>"
    return text if len(text) <= 60 else text[:57] + "..."
