"""Check a KServe manifest offline against the fields KServe's CRDs define, strictly.

The schema here is ours: it lists the parts of KServe's `ServingRuntime`
(serving.kserve.io/v1alpha1) and `InferenceService` (serving.kserve.io/v1beta1) that
`cogserve k8s --kserve` writes, with the names and types of KServe's API reference.
As `kubectl apply --validate=strict` does, a field an object does not know is an error.
A container is checked against the Kubernetes `Container` schema that kubernetes-validate
installs (the one the API server uses inside a pod), found at test time, not copied.
A manifest that starts using another KServe field needs it added here first, with its type.
"""

from __future__ import annotations

import functools
import json
import pathlib
from typing import Any

import jsonschema
import kubernetes_validate
from referencing import Registry, Resource

INT = {"type": "integer"}
STR = {"type": "string"}
BOOL = {"type": "boolean"}
STR_MAP = {"type": "object", "additionalProperties": STR}
# the `$id` of kubernetes-validate's definitions file, and Container's name in it
KUBERNETES = "https://kubernetes.io/api/_definitions.json"
CONTAINER = "io.k8s.api.core.v1.Container"
VOLUME = "io.k8s.api.core.v1.Volume"


def strict(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


METADATA = {"type": "object", "properties": {"name": STR, "namespace": STR,
                                             "labels": STR_MAP, "annotations": STR_MAP}}

MODEL_FORMAT = strict({"name": STR, "version": STR}, required=("name",))

SERVING_RUNTIME_SPEC = strict({
    "supportedModelFormats": {"type": "array", "items": strict(
        {"name": STR, "version": STR, "autoSelect": BOOL, "priority": INT},
        required=("name",))},
    "protocolVersions": {"type": "array",
                         "items": {"enum": ["v1", "v2", "grpc-v1", "grpc-v2"]}},
    "multiModel": BOOL,
    "disabled": BOOL,
    "annotations": STR_MAP,
    "labels": STR_MAP,
    "nodeSelector": STR_MAP,
    "containers": {"type": "array", "items": {"$ref": f"{KUBERNETES}#/$defs/{CONTAINER}"}},
    "volumes": {"type": "array", "items": {"$ref": f"{KUBERNETES}#/$defs/{VOLUME}"}},
}, required=("containers",))

PREDICTOR_SPEC = strict({
    "minReplicas": {"type": "integer", "minimum": 0},
    "maxReplicas": {"type": "integer", "minimum": 0},
    "containerConcurrency": {"type": "integer", "minimum": 0},
    "scaleMetric": {"enum": ["cpu", "memory", "concurrency", "rps"]},
    "scaleTarget": INT,
    "timeout": INT,
    "serviceAccountName": STR,
    "annotations": STR_MAP,
    "labels": STR_MAP,
    "model": strict({"modelFormat": MODEL_FORMAT, "runtime": STR, "protocolVersion": STR,
                     "storageUri": STR, "args": {"type": "array", "items": STR}},
                    required=("modelFormat",)),
})

KINDS = {
    "serving.kserve.io/v1alpha1/ServingRuntime": SERVING_RUNTIME_SPEC,
    "serving.kserve.io/v1beta1/InferenceService": strict({"predictor": PREDICTOR_SPEC},
                                                         required=("predictor",)),
}


def _kubernetes_definitions() -> Resource[Any]:
    """Kubernetes' own definitions, as the kubernetes-validate installed here ships them
    (strict: unknown fields are errors), Container among them."""
    root = pathlib.Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    folder = root / f"v{kubernetes_validate.latest_version()}-local-strict"
    definitions = folder / "_definitions.json"
    assert definitions.is_file(), f"kubernetes-validate's layout changed: no {definitions}"
    return Resource.from_contents(json.loads(definitions.read_text()))


@functools.cache
def _validator(key: str) -> jsonschema.Draft202012Validator:
    schema = strict({"apiVersion": STR, "kind": STR, "metadata": METADATA, "spec": KINDS[key]},
                    required=("apiVersion", "kind", "metadata", "spec"))
    registry: Registry[Any] = _kubernetes_definitions() @ Registry()
    return jsonschema.Draft202012Validator(schema, registry=registry)


def errors(document: dict[str, Any]) -> list[str]:
    """Every place where `document` does not fit its kind's schema."""
    group, _, version = document["apiVersion"].partition("/")
    validator = _validator(f"{group}/{version}/{document['kind']}")
    return [f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}"
            for e in validator.iter_errors(document)]
