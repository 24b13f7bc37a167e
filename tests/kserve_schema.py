"""Check a KServe manifest against KServe's published CRD schemas, offline.

tests/schemas/kserve-crds.json.gz holds the `openAPIV3Schema` of KServe's own CRDs
(config/crd/full/serving.kserve.io_inferenceservices.yaml and ..._servingruntimes.yaml;
the commit is in its "source" field), unchanged. This is the schema the Kubernetes API
server checks an InferenceService or ServingRuntime against. As `kubectl apply
--validate=strict` does, a field the schema does not know is an error: objects that list
their properties and do not declare `x-kubernetes-preserve-unknown-fields` get
`additionalProperties: false` here.
"""

from __future__ import annotations

import functools
import gzip
import json
import pathlib
from typing import Any

import jsonschema

SCHEMAS = pathlib.Path(__file__).parent / "schemas" / "kserve-crds.json.gz"


@functools.cache
def _validator(key: str) -> jsonschema.Draft7Validator:
    schemas = json.loads(gzip.decompress(SCHEMAS.read_bytes()))["schemas"]
    return jsonschema.Draft7Validator(_strict(schemas[key]))


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: _strict(v) for k, v in node.items()}
    if ("properties" in node and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")):
        node["additionalProperties"] = False
    return node


def errors(document: dict[str, Any]) -> list[str]:
    """Every place where `document` does not fit its kind's schema."""
    group, _, version = document["apiVersion"].partition("/")
    validator = _validator(f"{group}/{version}/{document['kind']}")
    return [f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}"
            for e in validator.iter_errors(document)]
