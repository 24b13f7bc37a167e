"""Read a run()/train() signature into typed input and output descriptions.

This runs in the worker (which imports the model) and in `cogserve schema`; the parent
only ever sees the OpenAPI document built from these descriptions. Every definition
error names the file, the line and the parameter, because the author has to find it.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import inspect
import io
import pathlib
import re
import types
import typing
from typing import Any

from cogserve.exceptions import DefinitionError
from cogserve.model.schema import input_property
from cogserve.model.specs import InputSpec, OutputSpec, Signature, Streamed, TypeKind, TypeSpec
from cogserve.model.validation import Errors, compile_property  # one rule set for both
from cogserve.sdk import types as sdk_types
from cogserve.sdk.runner import MISSING, DefaultFactory, FieldInfo

PRIMITIVES = {str: TypeKind.STR, int: TypeKind.INT, float: TypeKind.FLOAT, bool: TypeKind.BOOL}
JSON_NATIVE = {TypeKind.STR, TypeKind.INT, TypeKind.FLOAT, TypeKind.BOOL, TypeKind.ANY,
               TypeKind.LIST}


class _Where:
    """Formats "FILE:LINE: ..." for definition errors of one function.

    The source is parsed only when an error is raised: a good model pays nothing for it.
    """

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def _lines(self) -> tuple[str, int, dict[str, int]]:
        import ast
        import textwrap

        code = getattr(self.fn, "__code__", None)
        file = code.co_filename if code else "<unknown>"
        line = code.co_firstlineno if code else 0
        params: dict[str, int] = {}
        try:
            lines, start = inspect.getsourcelines(self.fn)
            node = ast.parse(textwrap.dedent("".join(lines))).body[0]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                line = start + node.lineno - 1
                args = node.args
                for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                    params[arg.arg] = start + arg.lineno - 1
        except (OSError, TypeError, SyntaxError, IndexError):
            pass
        return file, line, params

    def error(self, message: str, param: str | None = None) -> DefinitionError:
        file, line, params = self._lines()
        line = params.get(param, line) if param else line
        where = f"{_short(file)}:{line}"
        subject = f"{self.fn.__qualname__}()"
        if param:
            subject += f' parameter "{param}"'
        return DefinitionError(f"{where}: {subject}: {message}")


def _short(filename: str) -> str:
    try:
        return str(pathlib.Path(filename).relative_to(pathlib.Path.cwd()))
    except ValueError:
        return filename


def read_signature(fn: Any, *, skip_self: bool = False, batched: bool = False) -> Signature:
    """Describe the inputs and output of a bound method or function.

    `batched` (`@batch`): every parameter is `list[T]` and the return `list[O]`; the
    signature served is the per-request one, `T` and `O`.
    """
    where = _Where(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # a NameError in an annotation, say
        raise where.error(f"cannot resolve type annotations: {exc}") from exc
    sig = inspect.signature(fn)
    result = Signature()
    order = 0
    for name, param in sig.parameters.items():
        if skip_self and name == "self":
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise where.error("*args and **kwargs cannot be inputs", name)
        if param.kind is param.POSITIONAL_ONLY:  # inputs are passed by name
            raise where.error("is positional-only (before `/`); inputs are passed by name",
                              name)
        if name not in hints:
            raise where.error("has no type annotation", name)
        hint = _batch_item(hints[name], where, name) if batched else hints[name]
        tspec = _input_type(hint, where, name)
        default = param.default
        info = default if isinstance(default, FieldInfo) else FieldInfo(
            default=MISSING if default is inspect.Parameter.empty else default
        )
        declared, factory = info.default, None
        if isinstance(declared, DefaultFactory):
            factory = declared.factory
            try:
                declared = factory()
            except Exception as exc:
                shown = getattr(factory, "__qualname__", repr(factory))
                raise where.error(f"default_factory {shown} failed: "
                                  f"{type(exc).__name__}: {exc}", name) from exc
        elif declared is None and not tspec.optional:
            if tspec.kind == TypeKind.SECRET:  # `Secret = Input(default=None)`: optional
                tspec = dataclasses.replace(tspec, optional=True)
            else:  # `seed: int = Input(default=None)`: None is no default, as Cog's schema
                declared = MISSING
        spec = InputSpec(name=name, type=tspec, info=info, order=order, default=declared,
                         factory=factory)
        _check_input(spec, where)
        result.inputs.append(spec)
        order += 1
    if "return" not in hints:
        raise where.error("has no return type annotation (the output type is required)")
    returned = _batch_item(hints["return"], where, None) if batched else hints["return"]
    result.output = _output_type(returned, where)
    if batched and result.output.iterator:
        raise where.error("@batch: run() returns one list of outputs, not an iterator per "
                          "item")
    return result


def _batch_item(tp: Any, where: _Where, name: str | None) -> Any:
    """`list[T]` -> `T` for a `@batch` run(): one value per request of the batch."""
    base = typing.get_args(tp)[0] if typing.get_origin(tp) is typing.Annotated else tp
    if typing.get_origin(base) in (list, collections.abc.Sequence) and typing.get_args(base):
        return typing.get_args(base)[0]
    what = f"is {_name(tp)}" if name else f"returns {_name(tp)}"
    raise where.error(f"@batch: {what}; a batched run() takes list[T] for every input and "
                      "returns list[T] (one item per request, in order)", name)


# ---------------------------------------------------------------- input types


def _opaque(tp: Any) -> TypeSpec | None:
    """`Annotated[T, Opaque]` as Cog's schema generator reads it: an object, or an array of
    objects when T is a list; `Annotated[T | None, Opaque]` is nullable. Values are passed
    through as JSON, never inspected."""
    if typing.get_origin(tp) is not typing.Annotated:
        return None
    base, *extras = typing.get_args(tp)
    if not any(e is sdk_types.Opaque for e in extras):
        return None
    optional = False
    if typing.get_origin(base) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(base) if a is not type(None)]
        if len(members) == 1:
            base, optional = members[0], True
    if (typing.get_origin(base) or base) is list:
        return TypeSpec(TypeKind.LIST, item=TypeSpec(TypeKind.ANY), optional=optional)
    return TypeSpec(TypeKind.ANY, optional=optional)


def _input_type(tp: Any, where: _Where, name: str) -> TypeSpec:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _opaque(tp) or _input_type(typing.get_args(tp)[0], where, name)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        members = [a for a in args if a is not type(None)]
        optional = len(members) != len(args)
        specs = tuple(_input_type(m, where, name) for m in members)
        if len(specs) == 1:
            return dataclasses.replace(specs[0], optional=optional)
        for s in specs:
            item_kind = s.item.kind if s.kind == TypeKind.LIST and s.item else TypeKind.ANY
            if s.kind not in JSON_NATIVE or s.optional or item_kind not in JSON_NATIVE:
                raise where.error(
                    f"unsupported type {_name(tp)}: union members must be str, int, float, "
                    "bool, dict or list (not Path, File, Secret or a model)",
                    name,
                )
        return TypeSpec(TypeKind.UNION, members=specs, optional=optional)
    if origin is typing.Literal:
        values = typing.get_args(tp)
        kinds = {type(v) for v in values}
        if not kinds <= {str, int} or len(kinds) != 1:
            raise where.error(f"unsupported type {_name(tp)}: Literal values must be all str "
                              "or all int", name)
        return TypeSpec(TypeKind.LITERAL, values=tuple(values),
                        item=TypeSpec(TypeKind.STR if str in kinds else TypeKind.INT))
    if origin in (list, collections.abc.Sequence, collections.abc.Iterable):
        args = typing.get_args(tp)
        item = _input_type(args[0], where, name) if args else TypeSpec(TypeKind.ANY)
        if item.kind in (TypeKind.LIST, TypeKind.UNION) or item.optional:
            raise where.error(f"unsupported type {_name(tp)}: list items must be a plain type",
                              name)
        return TypeSpec(TypeKind.LIST, item=item)
    if tp is list:
        return TypeSpec(TypeKind.LIST, item=TypeSpec(TypeKind.ANY))
    if origin is dict or tp is dict or tp is typing.Any or typing.is_typeddict(tp):
        return TypeSpec(TypeKind.ANY)  # a TypedDict input is an object, as Cog's schema
    if tp in PRIMITIVES:
        return TypeSpec(PRIMITIVES[tp])
    tensor = _tensor_type(tp)
    if tensor is not None:
        return tensor
    if isinstance(tp, type):
        if issubclass(tp, pathlib.Path) or tp is sdk_types.Path:
            return TypeSpec(TypeKind.PATH)
        if issubclass(tp, sdk_types.File) or tp is io.IOBase:
            return TypeSpec(TypeKind.FILE)
        if issubclass(tp, sdk_types.Secret):
            return TypeSpec(TypeKind.SECRET)
        if issubclass(tp, enum.Enum):
            values = tuple(m.value for m in tp)
            return TypeSpec(TypeKind.LITERAL, values=values,
                            item=TypeSpec(TypeKind.INT if all(isinstance(v, int) for v in values)
                                          else TypeKind.STR))
    raise where.error(
        f"unsupported input type {_name(tp)}; use str, int, float, bool, Path, File, Secret, "
        "list[...], dict, Optional[...], a union of JSON types or Literal[...]",
        name,
    )


def _check_input(spec: InputSpec, where: _Where) -> None:
    info, t, name = spec.info, spec.type, spec.name
    base = t.item if t.kind == TypeKind.LIST and t.item else t
    numeric = base.kind in (TypeKind.INT, TypeKind.FLOAT)
    stringy = base.kind in (TypeKind.STR, TypeKind.SECRET)
    if (info.ge is not None or info.le is not None) and not numeric:
        raise where.error(f"ge/le apply to int and float inputs, not {t.describe()}", name)
    if (info.min_length is not None or info.max_length is not None) and not (
        stringy or t.kind == TypeKind.LIST
    ):
        raise where.error(f"min_length/max_length apply to str and list inputs, not "
                          f"{t.describe()}", name)
    if info.regex is not None and not stringy:
        raise where.error(f"regex applies to str inputs, not {t.describe()}", name)
    if info.regex is not None:
        try:
            re.compile(info.regex)
        except re.error as exc:
            raise where.error(f"regex {info.regex!r} does not compile: {exc}", name) from None
    if info.choices is not None:
        if base.kind not in (TypeKind.STR, TypeKind.INT) or t.kind == TypeKind.LIST:
            raise where.error(f"choices apply to str and int inputs, not {t.describe()}", name)
        want = str if base.kind == TypeKind.STR else int
        bad = [c for c in info.choices if not isinstance(c, want) or isinstance(c, bool)]
        if bad:
            article = "an int" if want is int else "a str"
            raise where.error(f"choice {bad[0]!r} is not {article}", name)
    if info.accept is not None and base.kind not in (TypeKind.PATH, TypeKind.FILE):
        raise where.error(f"accept is only valid on Path or File inputs, not {t.describe()}",
                          name)
    default = spec.default
    if default is MISSING or default is None:
        return
    if t.kind == TypeKind.PATH and not str(default).startswith(("http://", "https://", "data:")):
        return  # a local file shipped with the model: the worker hands it over as is
    problem = check_default(spec)
    if problem:
        raise where.error(f"the default is invalid for its own declaration: {problem}", name)


def check_default(spec: InputSpec) -> str | None:
    """Why a default breaks its own declaration, or None."""
    value = spec.default
    if isinstance(value, sdk_types.Secret):
        value = value.get_secret_value()
    elif isinstance(value, pathlib.Path):
        value = str(value)
    elif isinstance(value, enum.Enum):
        value = value.value
    elif isinstance(value, tuple):
        value = list(value)
    check = compile_property(spec.name, input_property(spec, with_default=False), {})
    errors: Errors = []
    check(value, errors)
    if errors:
        return errors[0][1]
    return None


# ---------------------------------------------------------------- output types


def _output_type(tp: Any, where: _Where) -> OutputSpec:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        opaque = _opaque(tp)
        return OutputSpec(opaque) if opaque else _output_type(typing.get_args(tp)[0], where)
    args = typing.get_args(tp)
    concatenating = (sdk_types.ConcatenateIterator, sdk_types.AsyncConcatenateIterator)
    if tp in concatenating or origin in concatenating:
        item = _value_type(args[0], where) if args else TypeSpec(TypeKind.STR)
        if item.kind != TypeKind.STR:
            raise where.error("ConcatenateIterator must yield str")
        return OutputSpec(item, Streamed.CONCATENATE)
    if origin in (
        collections.abc.Iterator,
        collections.abc.Generator,
        collections.abc.Iterable,
        collections.abc.AsyncIterator,
        collections.abc.AsyncGenerator,
        collections.abc.AsyncIterable,
    ):
        item = _value_type(args[0], where) if args else TypeSpec(TypeKind.ANY)
        return OutputSpec(item, Streamed.ITERATOR)
    if origin in (typing.Union, types.UnionType):
        raise where.error(f"the return type {_name(tp)} is a union or Optional; return one "
                          "type (use a BaseModel with optional fields)")
    return OutputSpec(_value_type(tp, where))


def _value_type(tp: Any, where: _Where) -> TypeSpec:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _opaque(tp) or _value_type(typing.get_args(tp)[0], where)
    if tp in PRIMITIVES:
        return TypeSpec(PRIMITIVES[tp])
    if tp is typing.Any or tp is dict or origin is dict:
        return TypeSpec(TypeKind.ANY)
    tensor = _tensor_type(tp)
    if tensor is not None:
        return tensor
    if tp is list or origin in (list, collections.abc.Sequence):
        args = typing.get_args(tp)
        item = _value_type(args[0], where) if args else TypeSpec(TypeKind.ANY)
        return TypeSpec(TypeKind.LIST, item=item)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            return dataclasses.replace(_value_type(members[0], where), optional=True)
        specs = tuple(_value_type(m, where) for m in members)
        return TypeSpec(TypeKind.UNION, members=specs, optional=len(members) != len(args))
    if typing.is_typeddict(tp):  # an object; `required` lists the keys not NotRequired
        hints = _field_hints(tp)
        required = _typeddict_required(tp)
        return TypeSpec(TypeKind.OBJECT, model=tp, fields=tuple(
            (key, _value_type(hint, where), key in required) for key, hint in hints.items()))
    if isinstance(tp, type):
        if issubclass(tp, pathlib.Path):
            return TypeSpec(TypeKind.PATH)
        if issubclass(tp, sdk_types.File) or issubclass(tp, io.IOBase):
            return TypeSpec(TypeKind.FILE)
        if issubclass(tp, sdk_types.Secret):
            return TypeSpec(TypeKind.SECRET)
        if issubclass(tp, sdk_types.BaseModel) and dataclasses.is_dataclass(tp):
            hints = _field_hints(tp)
            fields = tuple(
                (f.name, _value_type(hints[f.name], where),
                 f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                 and not _is_optional(hints[f.name]))
                for f in dataclasses.fields(tp)
            )
            return TypeSpec(TypeKind.OBJECT, fields=fields, model=tp)
        if _is_pydantic_model(tp):
            hints = _field_hints(tp)
            fields = tuple(
                (fname, _value_type(hints.get(fname, typing.Any), where),
                 finfo.is_required() and not _is_optional(hints.get(fname)))
                for fname, finfo in getattr(tp, "model_fields", {}).items()
            )
            return TypeSpec(TypeKind.OBJECT, fields=fields, model=tp)
    raise where.error(
        f"unsupported output type {_name(tp)}; use str, int, float, bool, Path, File, "
        "list[...], dict, a BaseModel, or an Iterator of those"
    )


def _field_hints(tp: type) -> dict[str, Any]:
    """A class's field annotations with `Annotated` kept (`Opaque` is read from it) and
    TypedDict's `Required` / `NotRequired` taken off (`__required_keys__` says it)."""
    hints = typing.get_type_hints(tp, include_extras=True)
    for name, hint in hints.items():
        while typing.get_origin(hint) in (typing.Required, typing.NotRequired):
            hint = typing.get_args(hint)[0]
        hints[name] = hint
    return hints


def _typeddict_required(tp: Any) -> set[str]:
    """A TypedDict's required keys. `__required_keys__` misses `NotRequired[...]` written
    as a string (`from __future__ import annotations`), so the evaluated hints decide."""
    required = set()
    for key, hint in typing.get_type_hints(tp, include_extras=True).items():
        origin = typing.get_origin(hint)
        if origin is typing.Required or (origin is not typing.NotRequired
                                         and key in tp.__required_keys__):
            required.add(key)
    return required


def _tensor_type(tp: Any) -> TypeSpec | None:
    """cogserve.Tensor[...] or numpy.ndarray (also NDArray[np.float32]), without importing numpy."""
    if isinstance(tp, type) and issubclass(tp, sdk_types.Tensor):
        return TypeSpec(TypeKind.TENSOR, tensor=(tp.datatype, tp.shape))
    base = typing.get_origin(tp) or tp
    if not (isinstance(base, type) and base.__name__ == "ndarray"
            and base.__module__ == "numpy"):
        return None
    datatype = None
    args = typing.get_args(tp)
    if len(args) == 2:  # ndarray[shape, dtype[scalar]]
        scalar = typing.get_args(args[1])
        if scalar and isinstance(scalar[0], type):
            try:
                datatype = sdk_types.tensor_datatype(scalar[0])
            except TypeError:
                datatype = None  # np.generic, np.floating...: any datatype
    return TypeSpec(TypeKind.TENSOR, tensor=(datatype, None))


def _is_optional(tp: Any) -> bool:
    if typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in (
        typing.get_args(tp)
    )


def _is_pydantic_model(tp: type) -> bool:
    return any(
        c.__module__.startswith("pydantic") and c.__name__ == "BaseModel" for c in tp.__mro__
    )


def _name(tp: Any) -> str:
    """How the author wrote the type: `Path | str`, not `cogserve.sdk.types.Path | str`."""
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__name__
    return re.sub(r"\b(?:[A-Za-z_][A-Za-z0-9_]*\.)+([A-Za-z_][A-Za-z0-9_]*)", r"\1", str(tp))
