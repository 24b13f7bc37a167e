"""V2 tensors <-> Python values and packed bytes, in the parent, without numpy.

A request tensor arrives as JSON `data` (flat or nested, row-major) or as raw bytes
of the binary tensor data extension. For a tensor input the parent only needs packed
little-endian bytes to hand to the worker (which wraps them in an ndarray), so
JSON numbers are packed with the stdlib `array` module, whose typecodes also reject
out-of-range integers; binary data is passed on untouched. Scalar and list inputs
need Python values, which `WireTensor.values()` gives from either form.
"""

from __future__ import annotations

import struct
import sys
from array import array
from dataclasses import dataclass
from itertools import chain
from typing import Any

from cogserve.wire.datatypes import Datatype, Family, named


class TensorError(Exception):
    """A request the V2 protocol refuses: 400 (or `status`) with {"error": message}, and
    `headers` when the answer has some (Retry-After on a 429)."""

    def __init__(self, message: str, status: int = 400,
                 headers: list[tuple[bytes, bytes]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.headers = headers or []


_FP32_MAX = 3.4028234663852886e38
_SWAP = sys.byteorder != "little"  # the wire format is little-endian
_LEN = struct.Struct("<I")


def datatype(name: Any, where: str) -> Datatype:
    """The datatype a request names (its exact wire name), or a TensorError."""
    found = named(name) if isinstance(name, str) else None
    if found is None:
        raise TensorError(f"{where}: unknown datatype {name!r}; use one of "
                          f"{', '.join(Datatype)}")
    return found


def element_count(shape: Any, where: str) -> int:
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise TensorError(f"{where}: shape must be a list of non-negative integers, "
                          f"got {shape!r}")
    count = 1
    for dim in shape:
        count *= dim
    return count


def flatten(data: Any, where: str) -> list[Any]:
    """Row-major elements of nested lists (flat data is returned as is)."""
    if not isinstance(data, list):
        raise TensorError(f"{where}: data must be a JSON array, got {type(data).__name__}")
    while data and type(data[0]) is list:
        if not all(type(row) is list for row in data):
            raise TensorError(f"{where}: data mixes nested arrays and values")
        data = list(chain.from_iterable(data))
    flat: list[Any] = data
    return flat


@dataclass(slots=True, eq=False)
class WireTensor:
    """One decoded request tensor: either JSON elements (`items`) or raw little-endian
    bytes (`raw`)."""

    name: str
    dtype: Datatype
    shape: list[int]
    count: int
    items: list[Any] | None = None
    raw: bytes | memoryview | None = None

    @property
    def where(self) -> str:
        return f"input {self.name!r}"

    def packed(self) -> bytes | memoryview:
        """The tensor as little-endian bytes (checked against the datatype's range); a
        binary tensor's own bytes, not a copy (4 MB for FP32[1M])."""
        if self.raw is not None:
            return self.raw
        assert self.items is not None
        return pack(self.dtype, self.items, self.where)

    def values(self) -> list[Any]:
        """Flat Python elements: bool, int, float, or bytes/str for BYTES."""
        if self.items is not None:
            if self.dtype.family is not Family.BYTES:
                pack(self.dtype, self.items, self.where)  # type and range check
            else:
                for item in self.items:
                    if not isinstance(item, str | bytes):
                        raise TensorError(f"{self.where}: {item!r} is not a BYTES value "
                                          "(a string)")
            return self.items
        assert self.raw is not None
        return unpack(self.dtype, self.raw, self.count, self.where)


def read_tensor(spec: Any, binary: memoryview, offset: int) -> tuple[WireTensor, int]:
    """Decode one request input; returns it and the offset of the next binary section."""
    if not isinstance(spec, dict):
        raise TensorError(f"each input must be an object, got {spec!r}")
    name = spec.get("name")
    if not isinstance(name, str):
        raise TensorError(f"an input has no name: {_short(spec)}")
    where = f"input {name!r}"
    dtype = datatype(spec.get("datatype"), where)
    count = element_count(spec.get("shape"), where)
    shape: list[int] = spec["shape"]  # element_count checked it
    params = spec.get("parameters") or {}
    if not isinstance(params, dict):
        raise TensorError(f"{where}: parameters must be an object")
    size = params.get("binary_data_size")
    if size is not None:
        if type(size) is not int or size < 0:
            raise TensorError(f"{where}: binary_data_size must be a non-negative integer")
        if "data" in spec:
            raise TensorError(f"{where}: has both data and binary_data_size")
        if offset + size > len(binary):
            raise TensorError(f"{where}: binary_data_size {size} runs past the end of the "
                              f"request body ({len(binary) - offset} bytes left)")
        raw = binary[offset:offset + size]
        if dtype.size and size != count * dtype.size:
            raise TensorError(f"{where}: shape {shape} of {dtype} needs "
                              f"{count * dtype.size} bytes, got binary_data_size {size}")
        if not dtype.size:  # BYTES: split the length-prefixed elements now
            items = [bytes(b) for b in _split_bytes(raw, count, where)]
            return WireTensor(name, dtype, shape, count, items=items), offset + size
        return WireTensor(name, dtype, shape, count, raw=raw), offset + size
    if "data" not in spec:
        raise TensorError(f"{where}: has no data (and no binary_data_size parameter)")
    items = flatten(spec["data"], where)
    if len(items) != count:
        raise TensorError(f"{where}: shape {shape} has {count} elements but data has "
                          f"{len(items)}")
    return WireTensor(name, dtype, shape, count, items=items), offset


def pack(dtype: Datatype, items: list[Any], where: str) -> bytes:
    """JSON elements -> little-endian bytes; wrong types and out-of-range values refused."""
    code = dtype.code
    try:
        if code == "?":
            if not all(type(v) is bool for v in items):
                bad = next(v for v in items if type(v) is not bool)
                raise TensorError(f"{where}: {bad!r} is not a BOOL (true or false)")
            return bytes(items)
        if dtype.family is Family.BYTES:
            return b"".join(_LEN.pack(len(b)) + b for b in (_as_bytes(v, where) for v in items))
        if dtype.family in (Family.INT, Family.UINT) and any(type(v) is bool for v in items):
            raise TensorError(f"{where}: a boolean is not a {dtype} value")
        if code == "e":
            return struct.pack(f"<{len(items)}e", *items)  # raises OverflowError past 65504
        packed = array(code, items)
        if code == "f" and _has_infinity(packed):  # JSON has no inf: it overflowed FP32
            raise TensorError(f"{where}: a value is out of range for FP32 ({_range(dtype)})")
    except TensorError:
        raise
    except OverflowError:
        raise TensorError(f"{where}: a value is out of range for {dtype} "
                          f"({_range(dtype)})") from None
    except (TypeError, struct.error) as exc:
        bad = _first_bad(items, dtype)
        detail = f"{bad!r} is not a {dtype} value" if bad is not None else str(exc)
        raise TensorError(f"{where}: {detail}") from None
    if _SWAP:  # pragma: no cover - big-endian hosts only
        packed.byteswap()
    return packed.tobytes()


def unpack(dtype: Datatype, raw: bytes | memoryview, count: int, where: str) -> list[Any]:
    """Little-endian bytes -> flat Python elements."""
    if dtype.code == "?":
        return [b != 0 for b in bytes(raw)]
    if dtype.code == "e":
        return list(struct.unpack(f"<{count}e", raw))
    if dtype.family is Family.BYTES:
        return [bytes(b) for b in _split_bytes(raw, count, where)]
    values = array(dtype.code)
    values.frombytes(raw)
    if _SWAP:  # pragma: no cover
        values.byteswap()
    return values.tolist()


def _split_bytes(raw: bytes | memoryview, count: int, where: str) -> list[memoryview]:
    view = memoryview(raw)
    out = []
    pos = 0
    while pos < len(view):
        if pos + 4 > len(view):
            raise TensorError(f"{where}: BYTES data ends inside an element's length prefix")
        (length,) = _LEN.unpack_from(view, pos)
        pos += 4
        if pos + length > len(view):
            raise TensorError(f"{where}: a BYTES element of {length} bytes runs past the end")
        out.append(view[pos:pos + length])
        pos += length
    if len(out) != count:
        raise TensorError(f"{where}: shape has {count} elements but the BYTES data has "
                          f"{len(out)}")
    return out


def _as_bytes(value: Any, where: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    raise TensorError(f"{where}: {value!r} is not a BYTES value (a string)")


_INF32 = (array("f", [float("inf")]).tobytes(), array("f", [float("-inf")]).tobytes())


def _has_infinity(packed: array[Any]) -> bool:
    """An FP32 infinity in packed data: a byte search (C speed) instead of min()/max()."""
    data = packed.tobytes()
    for pattern in _INF32:
        pos = data.find(pattern)
        while pos != -1:
            if pos % 4 == 0:
                return True
            pos = data.find(pattern, pos + 1)
    return False


def _range(dtype: Datatype) -> str:
    bits = dtype.size * 8
    if dtype.family is Family.UINT:
        return f"0..{2 ** bits - 1}"
    if dtype.family is Family.INT:
        return f"{-(2 ** (bits - 1))}..{2 ** (bits - 1) - 1}"
    if dtype.code == "d":
        return "finite"
    return f"|x| <= {65504.0 if dtype.code == 'e' else _FP32_MAX}"


def _first_bad(items: list[Any], dtype: Datatype) -> Any:
    want = (int,) if dtype.family in (Family.INT, Family.UINT) else (int, float)
    for v in items:
        if not isinstance(v, want) or isinstance(v, bool):
            return v
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# ---------------------------------------------------------------- responses


def output_tensor(name: str, dtype: Datatype, shape: list[int], items: list[Any],
                  binary: bool) -> tuple[dict[str, Any], bytes | None]:
    """A response output: JSON `data`, or a `binary_data_size` parameter and its bytes."""
    out: dict[str, Any] = {"name": name, "datatype": dtype, "shape": shape}
    if binary:
        blob = pack(dtype, items, f"output {name!r}")
        out["parameters"] = {"binary_data_size": len(blob)}
        return out, blob
    if dtype.family is Family.BYTES:
        items = [v.decode("utf-8", errors="replace") if isinstance(v, bytes) else v
                 for v in items]
    out["data"] = items
    return out, None
