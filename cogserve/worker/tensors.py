"""numpy arrays for tensor inputs and outputs, built in the worker only.

This is the one module that imports numpy, and only the worker of a model that
declares a tensor loads it: the parent and every other model never pay for numpy.
Packed tensors arrive as base64 of little-endian bytes (see `cogserve.v2.codec`), so a
million floats become an array with one decode and one copy, never a Python list.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from cogserve.wire.datatypes import Datatype, Family
from cogserve.wire.protocol import (
    TENSOR_B64,
    TENSOR_FILE,
    TENSOR_ITEMS,
    TENSOR_KEY,
)
from cogserve.worker import handover

_KIND = {Family.INT: "i", Family.UINT: "u", Family.FLOAT: "f"}  # numpy's kind letters


def _numpy_dtype(datatype: Datatype) -> Any:
    """numpy's dtype for a V2 datatype: little-endian, as the wire format is."""
    if datatype.family is Family.BOOL:
        return np.dtype(np.bool_)
    if datatype.family is Family.BYTES:
        return np.dtype(object)
    return np.dtype(f"<{_KIND[datatype.family]}{datatype.size}")


NUMPY_DTYPES: dict[str, Any] = {d.value: _numpy_dtype(d) for d in Datatype}
Declared = tuple[str | None, tuple[int, ...] | None] | None


def to_array(value: Any, declared: Declared, name: str) -> np.ndarray:
    """The ndarray run() receives, from nested JSON lists or a packed tensor."""
    datatype, shape = declared or (None, None)
    if type(value) is dict and TENSOR_KEY in value:
        packed = value[TENSOR_KEY]
        dims = tuple(packed["shape"])
        if TENSOR_FILE in packed:
            array = _from_file(packed[TENSOR_FILE],
                               NUMPY_DTYPES[packed["datatype"]]).reshape(dims)
        elif TENSOR_B64 in packed:
            raw = bytearray(base64.b64decode(packed[TENSOR_B64]))  # writable, like any input
            array = np.frombuffer(raw, dtype=NUMPY_DTYPES[packed["datatype"]]).reshape(dims)
        else:
            items = [base64.b64decode(item) for item in packed[TENSOR_ITEMS]]
            array = np.empty(len(items), dtype=object)
            array[:] = items
            array = array.reshape(dims)
    else:
        dtype = NUMPY_DTYPES[datatype] if datatype else None
        try:
            if datatype == "BYTES":
                array = np.array(_bytes_items(value), dtype=object)
            else:
                array = np.asarray(value, dtype=dtype)
        except (ValueError, TypeError, OverflowError) as exc:
            raise ValueError(f"input {name}: not a {datatype or 'numeric'} tensor: {exc}") from None
        if array.dtype == object and datatype != "BYTES":
            raise ValueError(f"input {name}: not a rectangular numeric tensor")
    check_shape(array.shape, shape, f"input {name}")
    return array


def _from_file(path: str, dtype: Any) -> np.ndarray:
    """Read (and remove) the parent's spill file of a packed tensor."""
    where = handover.spilled_tensor(path)
    try:
        return np.fromfile(where, dtype=dtype)
    finally:
        handover.remove(where)


def _bytes_items(value: Any) -> Any:
    if isinstance(value, list):
        return [_bytes_items(v) for v in value]
    return value.encode() if isinstance(value, str) else value


def check_shape(actual: tuple[int, ...], declared: tuple[int, ...] | None, where: str) -> None:
    if declared is None:
        return
    if len(actual) != len(declared) or any(d not in (-1, a) for a, d in zip(actual, declared,
                                                                          strict=True)):
        raise ValueError(f"{where}: shape {list(actual)} does not match the declared shape "
                         f"{list(declared)}")


def from_array(value: Any, declared: Declared, where: str) -> Any:
    """A returned array (or nested list) as nested JSON lists of the declared datatype."""
    datatype, shape = declared or (None, None)
    try:
        if datatype == "BYTES":
            array = np.asarray(value, dtype=object)
        else:
            array = np.asarray(value, dtype=NUMPY_DTYPES[datatype] if datatype else None)
    except (ValueError, TypeError, OverflowError) as exc:
        raise TypeError(f"{where}: not a {datatype or 'numeric'} tensor: {exc}") from None
    if array.dtype == object and datatype != "BYTES":
        raise TypeError(f"{where}: not a rectangular numeric tensor")
    try:
        check_shape(array.shape, shape, where)
    except ValueError as exc:
        raise TypeError(str(exc)) from None
    out = array.tolist()
    if datatype == "BYTES":
        return _text(out)
    return out


def _text(value: Any) -> Any:
    if isinstance(value, list):
        return [_text(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value if isinstance(value, str) else str(value)
