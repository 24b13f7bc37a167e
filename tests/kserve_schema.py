"""Check a KServe manifest against the KServe Python SDK's generated models, offline.

The SDK's models are generated from KServe's OpenAPI spec: each class lists its fields
(`attribute_map`, the JSON names) and their types (`openapi_types`), and its constructor
refuses missing required fields and values outside an enum. Kubernetes types inside
(V1Container, V1Probe, ...) come from the official `kubernetes` client the same way.
A field the schema does not know is an error, as `kubectl apply --validate=strict` makes it.
"""

from __future__ import annotations

import re
from typing import Any

import kserve.models
import kubernetes.client.models

_PRIMITIVES: dict[str, tuple[type, ...]] = {
    "str": (str,), "int": (int,), "float": (int, float), "bool": (bool,),
    "object": (object,), "datetime": (str,), "date": (str,),
}
# kserve writes list[X] and dict(str, X); the kubernetes client List[X] and Dict[str, X]
_LIST = re.compile(r"^[lL]ist\[(.+)\]$")
_DICT = re.compile(r"^(?:dict\(str, (.+)\)|Dict\[str, (.+)\])$")


def errors(document: dict[str, Any], kind_class: str) -> list[str]:
    """Every place where `document` does not fit the model class `kind_class`."""
    found: list[str] = []
    _check(document, kind_class, "", found)
    return found


def _model(name: str) -> Any:
    cls = getattr(kserve.models, name, None) or getattr(kubernetes.client.models, name, None)
    if cls is None:
        raise LookupError(f"no SDK model named {name}")
    return cls


def _check(value: Any, type_name: str, where: str, found: list[str]) -> None:
    if (m := _LIST.match(type_name)) is not None:
        if not isinstance(value, list):
            found.append(f"{where}: expected a list, got {value!r}")
            return
        for i, item in enumerate(value):
            _check(item, m.group(1), f"{where}[{i}]", found)
        return
    if (m := _DICT.match(type_name)) is not None:
        if not isinstance(value, dict):
            found.append(f"{where}: expected a mapping, got {value!r}")
            return
        for key, item in value.items():
            _check(item, m.group(1) or m.group(2), f"{where}.{key}", found)
        return
    if type_name in _PRIMITIVES:
        wanted = _PRIMITIVES[type_name]
        if isinstance(value, bool) and bool not in wanted and object not in wanted:
            found.append(f"{where}: expected {type_name}, got a boolean")
        elif not isinstance(value, wanted):
            found.append(f"{where}: expected {type_name}, got {value!r}")
        return
    cls = _model(type_name)
    if not isinstance(value, dict):
        found.append(f"{where}: expected a {type_name} mapping, got {value!r}")
        return
    by_json = {json_name: attr for attr, json_name in cls.attribute_map.items()}
    for key, item in value.items():
        attr = by_json.get(key)
        if attr is None:
            found.append(f"{where}.{key}: unknown field of {type_name}")
            continue
        _check(item, cls.openapi_types[attr], f"{where}.{key}", found)
    try:  # required fields and enum values: the generated constructor checks them
        cls(**{by_json[k]: v for k, v in value.items() if k in by_json})
    except (ValueError, TypeError) as exc:
        found.append(f"{where or type_name}: {exc}")
