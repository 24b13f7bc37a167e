"""Build the OpenAPI document Cog serves at /openapi.json from a model's signature.

The layout follows what Cog's build writes into `.cog/openapi_schema.json` (the
reference server reads that file), so clients that read Cog schemas read ours too.
The HTTP parent validates requests from this document alone.
"""

from __future__ import annotations

import copy
from typing import Any

from cogserve.model.specs import InputSpec, OutputSpec, Signature, Streamed, TypeKind, TypeSpec
from cogserve.sdk.runner import MISSING
from cogserve.sdk.types import Secret
from cogserve.wire.states import Status, WebhookEvent

_JSON_TYPES = {TypeKind.STR: "string", TypeKind.INT: "integer", TypeKind.FLOAT: "number",
               TypeKind.BOOL: "boolean"}


def type_schema(t: TypeSpec) -> dict[str, Any]:
    """The JSON schema of one value type (shared by inputs and outputs)."""
    kind = t.kind
    if kind in _JSON_TYPES:
        out: dict[str, Any] = {"type": _JSON_TYPES[kind]}
    elif kind in (TypeKind.PATH, TypeKind.FILE):
        out = {"type": "string", "format": "uri"}
    elif kind == TypeKind.SECRET:
        out = {"type": "string", "format": "password", "writeOnly": True, "x-cog-secret": True}
    elif kind == TypeKind.ANY:
        out = {"type": "object"}
    elif kind == TypeKind.LIST:
        out = {"type": "array", "items": type_schema(t.item or TypeSpec(TypeKind.ANY))}
    elif kind == TypeKind.TENSOR:
        out = {"type": "array", "items": {}, "x-cogserve-tensor": tensor_extension(t)}
    elif kind == TypeKind.UNION:
        out = {"anyOf": [type_schema(m) for m in t.members]}
    elif kind == TypeKind.LITERAL:
        out = {"type": _JSON_TYPES[t.item.kind if t.item else TypeKind.STR], "enum": list(t.values)}
    elif kind == TypeKind.OBJECT:
        props: dict[str, Any] = {}
        required = []
        for name, ft, is_required in t.fields:
            prop = type_schema(ft)
            prop["title"] = _title(name)
            props[name] = prop
            if is_required:
                required.append(name)
        out = {"type": "object", "properties": props}
        if required:
            out["required"] = required
    else:  # pragma: no cover - signature.py only produces the kinds above
        raise ValueError(f"unknown type kind {kind}")
    if t.optional:
        out["nullable"] = True
    return out


def tensor_extension(t: TypeSpec) -> dict[str, Any]:
    """`x-cogserve-tensor`: what V2 metadata publishes and checks; absent keys mean "any"."""
    datatype, shape = t.tensor or (None, None)
    ext: dict[str, Any] = {}
    if datatype is not None:
        ext["datatype"] = datatype
    if shape is not None:
        ext["shape"] = list(shape)
    return ext


def input_property(spec: InputSpec, *, with_default: bool = True) -> dict[str, Any]:
    """The schema of one input, with choices inline as `enum`."""
    info = spec.info
    prop = type_schema(spec.type)
    target = prop["items"] if prop.get("type") == "array" else prop
    if info.choices is not None:
        target["enum"] = list(info.choices)
    if info.ge is not None:
        target["minimum"] = _bound(info.ge, target)
    if info.le is not None:
        target["maximum"] = _bound(info.le, target)
    if info.min_length is not None:
        key = "minItems" if prop.get("type") == "array" else "minLength"
        prop[key] = info.min_length
    if info.max_length is not None:
        key = "maxItems" if prop.get("type") == "array" else "maxLength"
        prop[key] = info.max_length
    if info.regex is not None:
        target["pattern"] = info.regex
    if info.accept is not None:
        prop["x-cog-accept"] = info.accept
    if with_default and spec.default is not MISSING:
        secret = spec.type.kind == TypeKind.SECRET or (spec.type.item is not None
                                                and spec.type.item.kind == TypeKind.SECRET)
        default = spec.default
        prop["default"] = _redacted(default) if secret and default is not None else \
            _json_default(default)
    return prop


def _bound(value: float, target: dict[str, Any]) -> float:
    """`ge=0.0` on an int input is written `0`, as clients (and the reference) expect."""
    if target.get("type") == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _redacted(value: Any) -> Any:
    return ["**********" for _ in value] if isinstance(value, list | tuple) else "**********"


def _json_default(value: Any) -> Any:
    if isinstance(value, Secret):  # the schema is public; the worker keeps the real default
        return "**********"
    if isinstance(value, tuple | list):
        return [_json_default(v) for v in value]
    if hasattr(value, "value") and type(value).__module__ != "builtins":  # an Enum member
        return value.value
    if hasattr(value, "__fspath__"):
        return str(value)
    return value


def input_schema(sig: Signature) -> tuple[dict[str, Any], dict[str, Any]]:
    """The `Input` component, plus one enum component per input with choices (as Cog does)."""
    props: dict[str, Any] = {}
    enums: dict[str, Any] = {}
    required = []
    for spec in sig.inputs:
        prop = input_property(spec)
        if "enum" in prop and prop.get("type") != "array":
            enums[spec.name] = {
                "title": spec.name,
                "description": "An enumeration.",
                "enum": prop.pop("enum"),
                "type": prop.pop("type"),
            }
            prop = {"allOf": [{"$ref": f"#/components/schemas/{spec.name}"}], **prop}
        prop["title"] = _title(spec.name)
        if spec.info.description:
            prop["description"] = spec.info.description
        if spec.info.deprecated:
            prop["deprecated"] = True
        prop["x-order"] = spec.order
        props[spec.name] = prop
        if spec.required:
            required.append(spec.name)
    component: dict[str, Any] = {"title": "Input", "type": "object", "properties": props}
    if required:
        component["required"] = required
    return component, enums


def output_schema(output: OutputSpec) -> dict[str, Any]:
    item = type_schema(output.type)
    if output.iterator:
        out: dict[str, Any] = {"type": "array", "items": item,
                               "x-cog-array-type": str(Streamed.ITERATOR)}
        if output.iterator is Streamed.CONCATENATE:
            out["x-cog-array-display"] = str(Streamed.CONCATENATE)
    else:
        out = item
    return {"title": "Output", **out}


def openapi_document(
    predict: Signature | None, train: Signature | None = None, version: str = "0.1.0",
    streaming: bool = False,
) -> dict[str, Any]:
    """The whole /openapi.json: paths, the envelope, and the model's Input/Output.

    `predict` is None for a train-only model (cog.yaml names only `train:`): the
    document then has no /predictions paths and no Input/Output, only the training parts.
    """
    schemas: dict[str, Any] = {}
    paths = copy.deepcopy(_PREDICTION_PATHS)
    if predict is not None:
        inp, enums = input_schema(predict)
        schemas.update(enums)
        schemas["Input"] = inp
        schemas["Output"] = output_schema(predict.output)
        schemas.update(_ENVELOPE)
    else:
        schemas.update({k: v for k, v in _ENVELOPE.items() if not k.startswith("Prediction")})
        paths = {k: v for k, v in paths.items() if not k.startswith("/predictions")}
    if streaming:  # what the reference server reads to allow Accept: text/event-stream
        paths["/predictions"]["post"]["x-cog-streaming"] = True
    if train is not None:
        tinp, tenums = input_schema(train)
        schemas.update({f"Training{k}": v for k, v in tenums.items()})
        tinp["title"] = "TrainingInput"
        for prop in tinp["properties"].values():
            for ref in prop.get("allOf", []):
                ref["$ref"] = ref["$ref"].replace("schemas/", "schemas/Training")
        schemas["TrainingInput"] = tinp
        schemas["TrainingOutput"] = {**output_schema(train.output), "title": "TrainingOutput"}
        schemas.update(_training_envelope())
        paths.update(_training_paths())
    return {
        "openapi": "3.0.2",
        "info": {"title": "Cog", "version": version},
        "paths": paths,
        "components": {"schemas": dict(sorted(schemas.items()))},
    }


def _title(name: str) -> str:
    return name.replace("_", " ").title()


def _ok(ref: str) -> dict[str, Any]:
    return {
        "200": {
            "description": "Successful Response",
            "content": {"application/json": {"schema": {"$ref": ref}}},
        },
        "202": {
            "description": "Accepted (Prefer: respond-async): the prediction as it starts",
            "content": {"application/json": {"schema": {"$ref": ref}}},
        },
        "422": {
            "description": "Validation Error (a body of the wrong shape: text/plain, as Cog's)",
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/HTTPValidationError"}},
                **_TEXT,
            },
        },
        **_errors("401", "404", "406", "409", "413", "429", "503"),
        **_texts("400", "415"),
    }


# The statuses cogserve answers besides the ones Cog's document lists, so the document
# and the behaviour agree (a response-schema fuzzer flagged each as undocumented).
_ERROR_STATUSES = {
    "401": "Unauthorized: COGSERVE_AUTH_TOKEN is set and the request lacks it",
    "403": "Forbidden: the route is disabled",
    "404": "Not Found",
    "406": "Not Acceptable: streaming was asked of a model that does not stream",
    "409": "Conflict: every slot is busy, or the id is already running",
    "413": "Payload Too Large",
    "429": "Too Many Requests: the queue (--queue-size) is full; Retry-After says when to "
           "try again",
    "503": "Service Unavailable: setup has not finished, failed, or the server is stopping",
}


def _errors(*statuses: str) -> dict[str, Any]:
    return {status: {"description": _ERROR_STATUSES[status], "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/ErrorResponse"}}}} for status in statuses}


# A body that cannot be read is answered in text/plain, as Cog (coglet) answers it
_TEXT = {"text/plain": {"schema": {"type": "string"}}}
_TEXT_STATUSES = {
    "400": "Bad Request: the body is not JSON",
    "415": "Unsupported Media Type: a Content-Type that is not JSON",
}


def _texts(*statuses: str) -> dict[str, Any]:
    return {status: {"description": _TEXT_STATUSES[status], "content": _TEXT}
            for status in statuses}


# cancel of an id that is neither running nor recently finished: 404 with `{}`, as Cog's
_UNKNOWN_ID = {"404": {"description": "Not Found: no such id", "content": {"application/json": {
    "schema": {"title": "Unknown Id", "type": "object"}}}}}


def _body(ref: str, title: str | None = None) -> dict[str, Any]:
    """A JSON request body of schema `ref`; with a title (an idempotent PUT's, as FastAPI
    writes it) the schema is `allOf` the one."""
    schema = {"$ref": ref} if title is None else {"title": title, "allOf": [{"$ref": ref}]}
    return {"content": {"application/json": {"schema": schema}}}


def _cancel_responses(title: str) -> dict[str, Any]:
    """A cancel's answers: `{}` (titled as Cog's), 404 with `{}` for an unknown id."""
    return {**_plain(title), "422": _ok("")["422"], **_errors("401"), **_UNKNOWN_ID}


def _plain(title: str) -> dict[str, Any]:
    return {
        "200": {
            "description": "Successful Response",
            "content": {"application/json": {"schema": {"title": title}}},
        }
    }


_PREFER = {"required": False, "schema": {"title": "Prefer", "type": "string"},
           "name": "prefer", "in": "header"}


def _id_param(name: str, title: str) -> dict[str, Any]:
    return {"required": True, "schema": {"title": title, "type": "string"}, "name": name,
            "in": "path"}


def _listing(kind: str, response_ref: str) -> dict[str, Any]:
    """`GET /predictions` (`/trainings`): an addition to Cog's API, beside polling one id
    with `GET /predictions/{id}`; see README "Beyond Cog's API"."""
    plural = f"{kind}s"
    return {
        "summary": f"List {plural.title()}",
        "description": f"{plural.capitalize()} newest first, a page at a time: those the "
                       "prediction store keeps (--store), or with --store memory those this "
                       "server runs, queues and recently finished. Poll one with GET "
                       f"/{plural}/{{id}}.",
        "operationId": f"list_{plural}_{plural}_get",
        "parameters": [
            {"name": "status", "in": "query", "required": False,
             "schema": {"$ref": "#/components/schemas/Status"}},
            {"name": "limit", "in": "query", "required": False,
             "schema": {"title": "Limit", "type": "integer", "minimum": 1, "maximum": 1000,
                        "default": 100}},
            {"name": "cursor", "in": "query", "required": False,
             "schema": {"title": "Cursor", "type": "string",
                        "description": "where the page starts: from a previous page's `next`"}},
        ],
        "responses": {
            "200": {"description": "Successful Response", "content": {"application/json": {
                "schema": {"title": f"{kind.title()} List", "type": "object",
                           "required": ["results", "next"], "properties": {
                               "results": {"type": "array", "items": {"$ref": response_ref}},
                               "next": {"type": "string", "nullable": True,
                                        "description": "the URL of the next page; null "
                                                       "on the last"}}}}}},
            "400": {"description": "Bad Request: a status, limit or cursor that is not valid",
                    "content": {"application/json": {"schema": {
                        "$ref": "#/components/schemas/ErrorResponse"}}}},
            **_errors("401", "503"),
        },
    }


_PREDICTION_PATHS: dict[str, Any] = {
    "/": {"get": {"summary": "Root", "operationId": "root__get", "responses": {**_plain("Response Root  Get"), **_errors("401")}}},
    "/health-check": {"get": {"summary": "Healthcheck", "operationId": "healthcheck_health_check_get",
                              "responses": _plain("Response Healthcheck Health Check Get")}},
    "/predictions": {"post": {
        "summary": "Predict", "description": "Run a single prediction on the model",
        "operationId": "predict_predictions_post", "parameters": [_PREFER],
        "requestBody": _body("#/components/schemas/PredictionRequest"),
        "responses": _ok("#/components/schemas/PredictionResponse")},
        "get": _listing("prediction", "#/components/schemas/PredictionResponse")},
    "/predictions/{prediction_id}": {"put": {
        "summary": "Predict Idempotent",
        "description": "Run a single prediction on the model (idempotent creation).",
        "operationId": "predict_idempotent_predictions__prediction_id__put",
        "parameters": [_id_param("prediction_id", "Prediction ID"), _PREFER],
        "requestBody": _body("#/components/schemas/PredictionRequest", "Prediction Request"),
        "responses": _ok("#/components/schemas/PredictionResponse")}},
    "/predictions/{prediction_id}/cancel": {"post": {
        "summary": "Cancel", "description": "Cancel a running prediction",
        "operationId": "cancel_predictions__prediction_id__cancel_post",
        "parameters": [_id_param("prediction_id", "Prediction ID")],
        "responses": _cancel_responses("Response Cancel Predictions  Prediction Id  Cancel Post")}},
    "/shutdown": {"post": {"summary": "Start Shutdown", "operationId": "start_shutdown_shutdown_post",
                           "responses": {**_plain("Response Start Shutdown Shutdown Post"),
                                         **_errors("401", "403")}}},
}


def _request(title: str, input_ref: str) -> dict[str, Any]:
    return {"title": title, "type": "object", "properties": {
        "id": {"title": "Id", "type": "string", "minLength": 1, "maxLength": 256,
               "pattern": "^[^/]+$"},
        "created_at": {"title": "Created At", "type": "string", "format": "date-time"},
        "input": {"$ref": f"#/components/schemas/{input_ref}"},
        "webhook": {"title": "Webhook", "maxLength": 65536, "minLength": 1, "type": "string",
                    "format": "uri", "pattern": "^https?://"},
        "webhook_events_filter": {"type": "array",
                                  "items": {"$ref": "#/components/schemas/WebhookEvent"},
                                  "default": [e.value for e in WebhookEvent]},
        "output_file_prefix": {"title": "Output File Prefix", "type": "string",
                               "pattern": "^https?://"},
    }}


def _response(title: str, input_ref: str, output_ref: str) -> dict[str, Any]:
    return {"title": title, "type": "object", "properties": {
        # the input as the client sent it (secrets masked, defaults not filled in): not
        # the Input schema, whose secrets are writeOnly and whose values are checked
        "input": {"title": "Input", "type": "object"},
        # null until there is one, and on failure or cancel
        "output": {"allOf": [{"$ref": f"#/components/schemas/{output_ref}"}], "nullable": True},
        "id": {"title": "Id", "type": "string"},
        "version": {"title": "Version", "type": "string"},
        "created_at": {"title": "Created At", "type": "string", "format": "date-time"},
        "started_at": {"title": "Started At", "type": "string", "format": "date-time",
                       "nullable": True},
        "completed_at": {"title": "Completed At", "type": "string", "format": "date-time",
                         "nullable": True},
        "logs": {"title": "Logs", "type": "string", "default": ""},
        "error": {"title": "Error", "type": "string", "nullable": True},
        "status": {"$ref": "#/components/schemas/Status"},
        "metrics": {"title": "Metrics", "type": "object"},
    }}


_ENVELOPE: dict[str, Any] = {
    "PredictionRequest": _request("PredictionRequest", "Input"),
    "PredictionResponse": _response("PredictionResponse", "Input", "Output"),
    "Status": {"title": "Status", "description": "An enumeration.", "type": "string",
               "enum": [s.value for s in (Status.STARTING, Status.PROCESSING, Status.SUCCEEDED,
                                          Status.CANCELED, Status.FAILED)]},
    "WebhookEvent": {"title": "WebhookEvent", "description": "An enumeration.", "type": "string",
                     "enum": [e.value for e in WebhookEvent]},
    "ValidationError": {"title": "ValidationError", "required": ["loc", "msg", "type"],
                        "type": "object", "properties": {
                            "loc": {"title": "Location", "type": "array",
                                    "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
                            "msg": {"title": "Message", "type": "string"},
                            "type": {"title": "Error Type", "type": "string"}}},
    "ErrorResponse": {"title": "ErrorResponse", "type": "object", "required": ["error"],
                      "properties": {"error": {"title": "Error", "type": "string"},
                                     "status": {"title": "Status", "type": "string"}}},
    "HTTPValidationError": {"title": "HTTPValidationError", "type": "object", "properties": {
        "detail": {"title": "Detail", "type": "array",
                   "items": {"$ref": "#/components/schemas/ValidationError"}}}},
}


def _training_envelope() -> dict[str, Any]:
    return {
        "TrainingRequest": _request("TrainingRequest", "TrainingInput"),
        "TrainingResponse": _response("TrainingResponse", "TrainingInput", "TrainingOutput"),
    }


def _training_paths() -> dict[str, Any]:
    return {
        "/trainings": {"post": {
            "summary": "Train", "operationId": "train_trainings_post", "parameters": [_PREFER],
            "requestBody": _body("#/components/schemas/TrainingRequest"),
            "responses": _ok("#/components/schemas/TrainingResponse")},
            "get": _listing("training", "#/components/schemas/TrainingResponse")},
        "/trainings/{training_id}": {"put": {
            "summary": "Train Idempotent", "operationId": "train_idempotent_trainings__training_id__put",
            "parameters": [_id_param("training_id", "Training ID"), _PREFER],
            "requestBody": _body("#/components/schemas/TrainingRequest", "Training Request"),
            "responses": _ok("#/components/schemas/TrainingResponse")}},
        "/trainings/{training_id}/cancel": {"post": {
            "summary": "Cancel Training", "operationId": "cancel_training_trainings__training_id__cancel_post",
            "parameters": [_id_param("training_id", "Training ID")],
            "responses": _cancel_responses("Response Cancel Training Trainings  Training Id  Cancel Post")}},
    }
