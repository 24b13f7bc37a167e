"""The model's V2 face, read from the OpenAPI schema the parent already has.

Each run() input is one input tensor and each output field one output tensor. The
parent never imports the model, so everything here comes from the `Input` and
`Output` components (plus `x-cogserve-tensor` for declared tensors):

    str, Secret, choices -> BYTES [1]     int -> INT64 [1]     float -> FP64 [1]
    bool -> BOOL [1]     Path/File -> BYTES [1] (a URL, or the file's bytes)
    list[T] -> T [-1]    dict, Any, unions of non-numbers -> BYTES [1] (JSON text)
    Tensor[dt, shape] / numpy.ndarray -> dt, shape (FP64, [-1] when undeclared)
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

from cogserve.model.validation import resolve
from cogserve.v2.codec import TensorError, WireTensor, datatype
from cogserve.wire import jsoncodec
from cogserve.wire.datatypes import Datatype, Family


class Layout(StrEnum):
    """How a run() input or output maps onto a V2 tensor."""

    SCALAR = "scalar"  # one value: shape [1]
    LIST = "list"  # list[T]: shape [-1]
    TENSOR = "tensor"  # a declared Tensor / numpy.ndarray: its own shape


class ElementKind(StrEnum):
    """What one element of a tensor is to the model, read from its schema."""

    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    STR = "str"
    FILE = "file"  # a URL (or the file's bytes, sent as a data: URL)
    JSON = "json"  # dict, Any, unions of non-numbers: BYTES hold JSON text
    TENSOR = "tensor"  # a Layout.TENSOR's elements: packed, never converted one by one


# element kind -> V2 datatype when the schema says nothing more precise
_KIND_DATATYPE = {ElementKind.INT: Datatype.INT64, ElementKind.FLOAT: Datatype.FP64,
                  ElementKind.BOOL: Datatype.BOOL, ElementKind.STR: Datatype.BYTES,
                  ElementKind.FILE: Datatype.BYTES, ElementKind.JSON: Datatype.BYTES}
# element kind -> datatype families a request may use for it
_ACCEPTS = {ElementKind.INT: {Family.INT, Family.UINT},
            ElementKind.FLOAT: {Family.INT, Family.UINT, Family.FLOAT},
            ElementKind.BOOL: {Family.BOOL}, ElementKind.STR: {Family.BYTES},
            ElementKind.FILE: {Family.BYTES}, ElementKind.JSON: set(Family)}
_URL_PREFIXES = ("http://", "https://", "data:")


@dataclass(frozen=True)
class TensorSpec:
    """One input or output tensor of the model."""

    name: str
    layout: Layout
    kind: ElementKind
    datatype: Datatype | None  # None: any datatype (an undeclared ndarray)
    dims: tuple[int, ...] | None  # declared tensor shape; None: any
    required: bool = False

    def metadata(self) -> dict[str, Any]:
        if self.layout is Layout.TENSOR:
            dims = list(self.dims) if self.dims is not None else [-1]
        else:
            dims = [-1] if self.layout is Layout.LIST else [1]
        return {"name": self.name, "datatype": self.datatype or Datatype.FP64, "shape": dims}


_JSON_KIND = {"integer": ElementKind.INT, "number": ElementKind.FLOAT,
              "boolean": ElementKind.BOOL}


def _element_kind(prop: dict[str, Any], components: dict[str, Any]) -> ElementKind:
    prop = resolve(prop, components)
    if "anyOf" in prop:
        kinds = {_element_kind(m, components) for m in prop["anyOf"]}
        return (ElementKind.FLOAT if kinds <= {ElementKind.INT, ElementKind.FLOAT}
                else ElementKind.JSON)
    jtype = prop.get("type")
    if jtype == "string":
        return ElementKind.FILE if prop.get("format") == "uri" else ElementKind.STR
    return _JSON_KIND.get(jtype or "", ElementKind.JSON)


def tensor_spec(name: str, prop: dict[str, Any], components: dict[str, Any],
                required: bool = False) -> TensorSpec:
    prop = resolve(prop, components)
    ext = prop.get("x-cogserve-tensor")
    if ext is not None:
        dims = ext.get("shape")
        declared = ext.get("datatype")  # a name cogserve.sdk.types checked, or None
        return TensorSpec(name, Layout.TENSOR, ElementKind.TENSOR,
                          datatype(declared, f"the model's {name!r}") if declared else None,
                          tuple(dims) if dims is not None else None, required)
    if prop.get("type") == "array":
        kind = _element_kind(prop.get("items") or {}, components)
        return TensorSpec(name, Layout.LIST, kind, _KIND_DATATYPE[kind], None, required)
    kind = _element_kind(prop, components)
    return TensorSpec(name, Layout.SCALAR, kind, _KIND_DATATYPE[kind], None, required)


@dataclass
class PackedTensor:
    """A tensor input ready for the worker; validated as a list, sent as bytes."""

    datatype: Datatype
    shape: list[int]
    raw: bytes | memoryview | None = None  # little-endian elements (a binary body's view)
    items: list[bytes] | None = None  # BYTES elements


class ModelMetadata:
    """Inputs and outputs of the model as tensors, and the conversions both ways."""

    def __init__(self, schema: dict[str, Any]) -> None:
        components = schema["components"]["schemas"]
        spec = components["Input"]
        required = set(spec.get("required", []))
        props = sorted(spec.get("properties", {}).items(),
                       key=lambda item: item[1].get("x-order", 0))
        self.inputs: dict[str, TensorSpec] = {
            name: tensor_spec(name, prop, components, name in required) for name, prop in props
        }
        output = resolve(components.get("Output", {}), components)
        self.iterator = output.get("x-cog-array-type") == "iterator"
        self.fields = False
        if self.iterator:
            item = tensor_spec("output", output.get("items") or {}, components)
            if item.layout is Layout.SCALAR:
                item = TensorSpec("output", Layout.LIST, item.kind, item.datatype, None)
            self.outputs = [item]
        elif output.get("type") == "object" and output.get("properties"):
            self.fields = True
            self.outputs = [tensor_spec(name, prop, components)
                            for name, prop in output["properties"].items()]
        else:
            self.outputs = [tensor_spec("output", output, components)]
        self.output_names = {o.name: o for o in self.outputs}

    # ------------------------------------------------------------ requests

    def input_value(self, spec: TensorSpec, tensor: WireTensor) -> Any:
        """What the Cog input dict holds for one request tensor."""
        where = tensor.where
        if spec.layout is Layout.TENSOR:
            return self._packed(spec, tensor)
        if tensor.dtype.family not in _ACCEPTS[spec.kind]:
            raise TensorError(f"{where}: datatype {tensor.dtype} does not fit this input "
                              f"(expected {spec.datatype})")
        if spec.layout is Layout.SCALAR and tensor.count != 1:
            raise TensorError(f"{where}: takes one element (shape [1]); got shape "
                              f"{tensor.shape} with {tensor.count} elements")
        items = [_element(spec.kind, v, where) for v in tensor.values()]
        return items[0] if spec.layout is Layout.SCALAR else items

    def _packed(self, spec: TensorSpec, tensor: WireTensor) -> PackedTensor:
        where = tensor.where
        if spec.datatype is not None and tensor.dtype is not spec.datatype:
            raise TensorError(f"{where}: datatype {tensor.dtype} does not match the "
                              f"model's {spec.datatype}")
        if spec.dims is not None and (
            len(spec.dims) != len(tensor.shape)
            or any(d not in (-1, a) for a, d in zip(tensor.shape, spec.dims, strict=True))
        ):
            raise TensorError(f"{where}: shape {tensor.shape} does not match the model's "
                              f"{list(spec.dims)}")
        if tensor.dtype.family is Family.BYTES:
            return PackedTensor(tensor.dtype, tensor.shape,
                                items=[_raw(v) for v in tensor.values()])
        return PackedTensor(tensor.dtype, tensor.shape, raw=tensor.packed())

    # ------------------------------------------------------------ responses

    def output_tensors(self, output: Any) -> list[tuple[TensorSpec, Datatype, list[int],
                                                        list[Any]]]:
        """The prediction's output as (spec, datatype, shape, flat elements); None is left out."""
        if self.fields:
            values = output if isinstance(output, dict) else {}
            pairs = [(spec, values.get(spec.name)) for spec in self.outputs]
        else:
            pairs = [(self.outputs[0], output)]
        result = []
        for spec, value in pairs:
            if value is None:
                continue
            result.append((spec, *_to_tensor(spec, value)))
        return result


def _raw(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def _element(kind: ElementKind, value: Any, where: str) -> Any:
    if kind is ElementKind.FLOAT:
        return float(value)
    if kind in (ElementKind.INT, ElementKind.BOOL):
        return value
    if kind is ElementKind.STR:
        return _text(value, where)
    if kind is ElementKind.FILE:
        if isinstance(value, str) and value.startswith(_URL_PREFIXES):
            return value
        raw = _raw(value)
        if raw.startswith(tuple(p.encode() for p in _URL_PREFIXES)):
            return raw.decode("ascii", errors="replace")
        return "data:application/octet-stream;base64," + base64.b64encode(raw).decode()
    # json: BYTES hold JSON text (a plain string that is not JSON stays a string)
    if isinstance(value, bytes | str):
        text = _text(value, where)
        try:
            return jsoncodec.loads(text)
        except jsoncodec.DecodeError:
            return text
    return value


def _text(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    try:
        return bytes(value).decode()
    except UnicodeDecodeError:
        raise TensorError(f"{where}: BYTES element is not UTF-8 text") from None


def _to_tensor(spec: TensorSpec, value: Any) -> tuple[Datatype, list[int], list[Any]]:
    if spec.layout is Layout.TENSOR:
        shape: list[int] = []
        probe = value
        while isinstance(probe, list):
            shape.append(len(probe))
            probe = probe[0] if probe else None
        items = _flatten(value) if shape else [value]
        return spec.datatype or _infer_datatype(items), shape, items
    if spec.layout is Layout.LIST:
        items = value if isinstance(value, list) else [value]
        return spec.datatype or Datatype.BYTES, [len(items)], [
            _out_element(spec.kind, v) for v in items]
    return spec.datatype or Datatype.BYTES, [1], [_out_element(spec.kind, value)]


def _flatten(value: list[Any]) -> list[Any]:
    out: list[Any] = []
    stack = [value]
    while stack:
        top = stack.pop()
        if top and isinstance(top[0], list):
            stack.extend(reversed(top))
        else:
            out.extend(top)
    return out


def _infer_datatype(items: list[Any]) -> Datatype:
    if items and all(type(v) is bool for v in items):
        return Datatype.BOOL
    if all(type(v) is int for v in items):
        return Datatype.INT64
    if all(isinstance(v, int | float) and type(v) is not bool for v in items):
        return Datatype.FP64
    return Datatype.BYTES


def _out_element(kind: ElementKind, value: Any) -> Any:
    if kind is ElementKind.JSON or (kind in (ElementKind.STR, ElementKind.FILE)
                                    and not isinstance(value, str)):
        return value if isinstance(value, str) else orjson.dumps(value).decode()
    if kind is ElementKind.FLOAT:
        return float(value)
    return value
