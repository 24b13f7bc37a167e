"""The Open Inference Protocol (V2 REST) as one ASGI callable mounted at /v2.

It is a second front end on the same runtime, not a second runtime: an inference
request becomes the Cog input dict, goes through the same validator, takes a slot
with `Service.create` and waits on `prediction.done`, exactly as a Cog prediction.
Health and readiness are the runtime's health, so they work as Kubernetes probes.
What the runtime refuses (`Refusal`) becomes V2's error shape in `refusal_error`, the
one place this front end maps it. A request's deadline is Triton's `timeout` parameter
or cogserve's `X-Prediction-Timeout` header (`_deadline`); an inference that ran past
it is answered 503, as Triton answers a request whose timeout expired.
"""

from __future__ import annotations

import base64
import os
import zlib
from collections.abc import Mapping
from typing import Any, NoReturn

import orjson

import cogserve
from cogserve.http import refusals
from cogserve.http.asgi import Receive, Scope, Send
from cogserve.http.deadline import request_timeout
from cogserve.http.disconnect import wait_or_cancel
from cogserve.http.responses import (
    PREDICTION_KEY,
    HTTPError,
    RequestError,
    header,
    read_body,
    send_json,
)
from cogserve.http.routing import NO_PARAMS, OTHER, ROUTE_KEY, Handler, Match, Router
from cogserve.model.validation import ErrorKind
from cogserve.runtime import handover
from cogserve.runtime.errors import Refusal
from cogserve.runtime.events import RuntimeEvent
from cogserve.runtime.request import PredictionRequest
from cogserve.runtime.service import Service
from cogserve.v2.codec import TensorError, output_tensor, read_tensor
from cogserve.v2.metadata import ElementKind, Layout, ModelMetadata, PackedTensor
from cogserve.wire import jsoncodec, protocol
from cogserve.wire.states import DEAD, SERVING, Status

EXTENSIONS = ["binary_tensor_data", "parameters"]
# Triton's per-request timeout, a request parameter in microseconds (0: none); reserved
# by Triton, so never read as a scalar input of the same name
TIMEOUT_PARAMETER = "timeout"
MAX_UINT64 = 2**64 - 1


def refusal_error(exc: Refusal) -> TensorError:
    """The runtime's refusal in V2's error shape: {"error": message} with its status."""
    status, headers = refusals.status_of(exc)  # the table both front ends share
    return TensorError(str(exc), status, headers)


class V2Routes:
    def __init__(self, service: Service, max_body: int) -> None:
        self.service = service
        self.max_body = max_body
        self._metadata: ModelMetadata | None = None
        self._schema_seen: Any = None
        model = "/v2/models/{model_name}"
        version = model + "/versions/{model_version}"
        table: dict[str, Mapping[str, Handler]] = {
            "/v2": {"GET": self._server},
            "/v2/health/live": {"GET": self._live},
            "/v2/health/ready": {"GET": self._ready},
        }
        for base in (model, version):  # a version in the path is checked, then as without
            table.update({base: {"GET": self._model}, base + "/ready": {"GET": self._model_ready},
                          base + "/infer": {"POST": self._infer_route}})
        # its matches name this front end: the App hands their requests here
        self.router = Router(table, app=self)
        self._unmatched = Match(OTHER, {}, NO_PARAMS, self)

    @property
    def metadata(self) -> ModelMetadata:
        schema = self.service.schema
        if schema is None:
            reason = self.service.fatal_reason or "the model is still loading"
            raise TensorError(f"model metadata is not available: {reason}", 503)
        if "Input" not in schema["components"]["schemas"]:
            raise TensorError("this model has no predictor (its cog.yaml names only `train:`);"
                              " the V2 protocol runs predictions only", 404)
        if schema is not self._schema_seen:  # a restarted worker reports its schema again
            self._metadata = ModelMetadata(schema)
            self._schema_seen = schema
        assert self._metadata is not None
        return self._metadata

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route: Match | None = scope.get(ROUTE_KEY)
        if route is None:  # called on its own rather than mounted in the App
            route = scope[ROUTE_KEY] = self.match(scope["path"])
        try:
            try:
                params = route.params
                if params:  # an unknown model or version is 404 before the method is looked at
                    self._check_model(params["model_name"], params.get("model_version"))
                handler = route.methods.get(scope["method"])
                if handler is None:
                    if not route.methods:
                        self._not_found(scope["path"])
                    allowed = ",".join(route.methods)
                    raise HTTPError(405, {"error": f"Method Not Allowed (use {allowed})"},
                                    [(b"allow", allowed.encode())])
                await handler(scope, receive, send)
            except Refusal as exc:
                raise refusal_error(exc) from None
        except TensorError as exc:
            await send_json(send, exc.status, {"error": exc.message}, exc.headers)
        except RequestError as exc:  # body too large, client gone while sending
            await send_json(send, exc.status, {"error": exc.message})
        except HTTPError as exc:  # 405
            await send_json(send, exc.status, exc.body, exc.headers)

    def match(self, path: str) -> Match:
        """The route of a path under /v2: its template (the label of metrics, access logs
        and traces), handlers and parameters. Empty segments are ignored, as they always
        were here (`/v2/models/m/` is `/v2/models/m`); a path no route has is "other"."""
        if "//" in path or path.endswith("/"):
            path = "/" + "/".join(part for part in path.split("/") if part)
        return self.router.match(path) or self._unmatched

    def _check_model(self, name: str, version: str | None) -> None:
        """404 for a model (or version) this server does not serve."""
        served = self.service.model_name
        if name != served:
            raise TensorError(f"unknown model {name!r}; this server serves {served!r}", 404)
        if version is not None:
            known_version = self.service.settings.model_version
            if version != known_version:
                known = (f"its version is {known_version!r}" if known_version
                         else "it has no versions")
                raise TensorError(f"unknown version {version!r} of model {name!r}; {known}",
                                  404)

    def _not_found(self, path: str) -> NoReturn:
        """No route: under /v2/models/<name>, a wrong name or version is said first (as
        for a path that has a route), else "Not Found"."""
        parts = [part for part in path.split("/") if part][1:]  # after "v2"
        if len(parts) >= 2 and parts[0] == "models":
            versioned = len(parts) >= 4 and parts[2] == "versions"
            self._check_model(parts[1], parts[3] if versioned else None)
        raise TensorError("Not Found", 404)

    # ------------------------------------------------------------ the routes

    async def _server(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send_json(send, 200, {"name": "cogserve", "version": cogserve.__version__,
                                    "extensions": EXTENSIONS})

    async def _live(self, scope: Scope, receive: Receive, send: Send) -> None:
        live = self.service.status not in DEAD
        await send_json(send, 200 if live else 503, {"live": live})

    async def _ready(self, scope: Scope, receive: Receive, send: Send) -> None:
        ready = await self._is_ready()
        await send_json(send, 200 if ready else 503, {"ready": ready})

    async def _model(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send_json(send, 200, self._model_metadata())

    async def _model_ready(self, scope: Scope, receive: Receive, send: Send) -> None:
        ready = await self._is_ready()
        await send_json(send, 200 if ready else 503,
                        {"name": self.service.model_name, "ready": ready})

    async def _infer_route(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._infer(scope, receive, send)
        finally:  # refused before a prediction was made, or the prediction's status
            made = scope.get(PREDICTION_KEY)
            service = self.service
            service.events.emit(RuntimeEvent.V2_INFERENCE, model=service.model_name,
                                outcome=made.status if made is not None else "rejected")

    # ------------------------------------------------------------ health and metadata

    async def _is_ready(self) -> bool:
        if self.service.shutting_down or self.service.current_health not in SERVING:
            return False
        health = await self.service.health()  # runs the user healthcheck, if any
        return health.status in SERVING

    def _model_metadata(self) -> dict[str, Any]:
        meta = self.metadata
        doc: dict[str, Any] = {"name": self.service.model_name}
        if self.service.settings.model_version:
            doc["versions"] = [self.service.settings.model_version]
        doc["platform"] = "python_cogserve"
        doc["inputs"] = [spec.metadata() for spec in meta.inputs.values()]
        doc["outputs"] = [spec.metadata() for spec in meta.outputs]
        return doc

    # ------------------------------------------------------------ inference

    async def _infer(self, scope: Scope, receive: Receive, send: Send) -> None:
        service = self.service
        service.check_accepting()  # not ready: say so before anything else, as Cog's routes do
        meta = self.metadata
        body = _decode(await read_body(receive, scope, self.max_body), scope, self.max_body)
        head, binary = _split(body, header(scope, b"inference-header-content-length"))
        request = _parse(head)
        raw_input = self._inputs(meta, request, binary)
        # the same validator as the Cog routes; a packed tensor stands in as a list
        errors = service.validate({k: [] if isinstance(v, PackedTensor) else v
                                   for k, v in raw_input.items()})
        if errors:
            raise TensorError("; ".join(
                f"input {e.field.split('.')[0]!r}: " + ("missing (a required input)"
                                                        if e.kind is ErrorKind.MISSING
                                                        else e.message)
                for e in errors))
        requested = _requested_outputs(meta, request)
        timeout = _deadline(scope, request)
        service.check_accepting()
        files: list[str] = []
        try:
            ready = {k: self._for_worker(v, files) if isinstance(v, PackedTensor) else v
                     for k, v in raw_input.items()}
            prediction = service.create(
                PredictionRequest(ready, id=service.new_id(), timeout=timeout))
            scope[PREDICTION_KEY] = prediction
            if not await wait_or_cancel(service, prediction, receive):
                return
        finally:
            for path in files:  # the worker removes each file it read; this catches the rest
                try:
                    os.unlink(path)
                except OSError:
                    pass
        if prediction.status is not Status.SUCCEEDED:
            detail = prediction.error or prediction.status
            # past its deadline: Triton's status for an expired request (UNAVAILABLE)
            raise TensorError(f"inference failed: {detail}", 503 if prediction.expired else 400)
        await self._respond(send, meta, request, requested, prediction)

    def _for_worker(self, packed: PackedTensor, files: list[str]) -> protocol.Message:
        """Small tensors ride in the IPC frame as base64; large ones go through a file."""
        if packed.items is not None:
            return protocol.packed_tensor(
                packed.datatype, packed.shape, protocol.TENSOR_ITEMS,
                [base64.b64encode(item).decode() for item in packed.items])
        if packed.raw is not None and len(packed.raw) >= protocol.TENSOR_FILE_THRESHOLD:
            path = handover.spill_tensor(packed.raw, self.service.tmp_root)
            files.append(path)
            return protocol.packed_tensor(packed.datatype, packed.shape, protocol.TENSOR_FILE,
                                          path)
        return protocol.packed_tensor(packed.datatype, packed.shape, protocol.TENSOR_B64,
                                      base64.b64encode(packed.raw or b"").decode("ascii"))

    def _inputs(self, meta: ModelMetadata, request: dict[str, Any], binary: memoryview
                ) -> dict[str, Any]:
        """The Cog input dict: one entry per tensor, plus scalar inputs named in parameters."""
        specs = request.get("inputs")
        if not isinstance(specs, list):
            raise TensorError("the request has no inputs list")
        raw_input: dict[str, Any] = {}
        offset = 0
        for spec in specs:
            tensor, offset = read_tensor(spec, binary, offset)
            model_input = meta.inputs.get(tensor.name)
            if model_input is None:
                known = ", ".join(meta.inputs) or "none"
                raise TensorError(f"input {tensor.name!r}: the model has no such input "
                                  f"(its inputs: {known})")
            if tensor.name in raw_input:
                raise TensorError(f"input {tensor.name!r}: given twice")
            raw_input[tensor.name] = meta.input_value(model_input, tensor)
        if offset != len(binary):
            raise TensorError(f"the request carries {len(binary) - offset} bytes of binary "
                              "data that no input claims (binary_data_size)")
        params = request.get("parameters") or {}
        if not isinstance(params, dict):
            raise TensorError("parameters must be an object")
        for key, value in params.items():  # parameters may supply scalar inputs by name
            declared = meta.inputs.get(key)
            if declared is not None and declared.layout is Layout.SCALAR and key not in raw_input \
                    and key != TIMEOUT_PARAMETER:
                raw_input[key] = value
        missing = [name for name, s in meta.inputs.items() if s.required and name not in raw_input]
        if missing:
            raise TensorError("; ".join(f"input {name!r}: missing (a required input)"
                                        for name in missing))
        return raw_input

    async def _respond(self, send: Send, meta: ModelMetadata, request: dict[str, Any],
                       requested: dict[str, bool | None] | None, prediction: Any) -> None:
        params = request.get("parameters") or {}
        all_binary = params.get("binary_data_output") is True
        produced = {spec.name: (spec, dtype, shape, items)
                    for spec, dtype, shape, items in meta.output_tensors(
                        prediction.current_output())}
        names = list(requested) if requested is not None else list(produced)
        outputs = []
        blobs: list[bytes] = []
        for name in names:
            if name not in produced:
                continue  # an optional output the model left empty
            spec, dtype, shape, items = produced[name]
            wanted = requested.get(name) if requested is not None else None
            binary = all_binary if wanted is None else wanted
            # binary BYTES: the file itself, not a data URL
            if binary and spec.kind is ElementKind.FILE:
                items = [_data_url_bytes(v) for v in items]
            try:
                out, blob = output_tensor(name, dtype, shape, items, binary)
            except TensorError as exc:
                raise TensorError(f"the model's output does not fit: {exc.message}") from None
            outputs.append(out)
            if blob is not None:
                blobs.append(blob)
        doc: dict[str, Any] = {"model_name": self.service.model_name}
        if self.service.settings.model_version:
            doc["model_version"] = self.service.settings.model_version
        request_id = request.get("id")
        doc["id"] = request_id if isinstance(request_id, str) else prediction.id
        doc["outputs"] = outputs
        head = orjson.dumps(doc)
        if not blobs:
            await send_json(send, 200, head)
            return
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/octet-stream"),
            (b"inference-header-content-length", str(len(head)).encode()),
            (b"content-length", str(len(head) + sum(map(len, blobs))).encode()),
        ]})
        await send({"type": "http.response.body", "body": head, "more_body": True})
        for i, blob in enumerate(blobs):
            await send({"type": "http.response.body", "body": blob,
                        "more_body": i < len(blobs) - 1})


def _data_url_bytes(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("data:"):
        head, _, payload = value.partition(",")
        if head.endswith(";base64"):
            return base64.b64decode(payload)
    return value  # an uploaded file's URL stays a URL


def _decode(body: bytes, scope: Scope, limit: int) -> bytes:
    """Undo Content-Encoding gzip/deflate (tritonclient's request compression)."""
    encoding = (header(scope, b"content-encoding") or "").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise TensorError(f"unsupported Content-Encoding {encoding!r}", 415)
    inflater = zlib.decompressobj(47 if encoding == "gzip" else 15)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise TensorError(f"the {encoding} body does not decompress: {exc}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise TensorError(f"the decompressed body exceeds the limit of {limit} bytes", 413)
    return out


def _split(body: bytes, header_length: str | None) -> tuple[bytes | memoryview, memoryview]:
    """The JSON header and the binary tensor data after it (Inference-Header-Content-Length)."""
    if header_length is None:
        return body, memoryview(b"")
    if not header_length.strip().isdigit() or int(header_length) > len(body):
        raise TensorError(f"Inference-Header-Content-Length {header_length!r} is not a length "
                          f"within the {len(body)}-byte body")
    view = memoryview(body)
    size = int(header_length)
    return view[:size], view[size:]


def _parse(head: bytes | memoryview) -> dict[str, Any]:
    try:
        request = jsoncodec.loads(head)
    except jsoncodec.DecodeError as exc:
        raise TensorError(f"the request is not valid JSON: {exc}") from None
    if not isinstance(request, dict):
        raise TensorError("the request must be a JSON object")
    if "id" in request and not isinstance(request["id"], str):
        raise TensorError("id must be a string")
    return request


def _deadline(scope: Scope, request: dict[str, Any]) -> float | None:
    """The request's deadline in seconds, or None: Triton's `timeout` parameter
    (microseconds, a whole number; 0 means none, as in Triton) and the
    X-Prediction-Timeout header (the same reader as Cog's routes); the shorter if both."""
    header_seconds = request_timeout(scope)
    params = request.get("parameters") or {}
    value = params.get(TIMEOUT_PARAMETER) if isinstance(params, dict) else None
    if value is None:
        return header_seconds
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_UINT64:
        raise TensorError(f"parameters.timeout must be a whole number of microseconds "
                          f"(0: no timeout), not {value!r}")
    if value == 0:
        return header_seconds
    seconds = value / 1_000_000
    return seconds if header_seconds is None else min(seconds, header_seconds)


def _requested_outputs(meta: ModelMetadata, request: dict[str, Any]
                       ) -> dict[str, bool | None] | None:
    """name -> binary_data (None: as the request says) for each requested output, or None."""
    outputs = request.get("outputs")
    if outputs is None:
        return None
    if not isinstance(outputs, list):
        raise TensorError("outputs must be a list")
    chosen: dict[str, bool | None] = {}
    for item in outputs:
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str):
            raise TensorError(f"each requested output needs a name: {item!r}")
        if name not in meta.output_names:
            known = ", ".join(meta.output_names)
            raise TensorError(f"output {name!r}: the model has no such output (its outputs: "
                              f"{known})")
        params = item.get("parameters") or {}
        binary = params.get("binary_data") if isinstance(params, dict) else None
        chosen[name] = binary if isinstance(binary, bool) else None
    return chosen
