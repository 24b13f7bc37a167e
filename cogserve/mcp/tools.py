"""The model as MCP tools, in MCP's JSON: tool definitions from the model's OpenAPI
schema, and a tool result from a finished prediction.

Plain dicts in MCP's wire shape (camelCase keys), no SDK import, so the rules are unit
tested in-process and `cogserve.mcp.server` only hands them to the SDK.

- One tool per entry point: the prediction is named after the model, the training
  after the model with `-train`. The description is the entry point's docstring.
- `inputSchema` is the `Input` (`TrainingInput`) schema with every `$ref` replaced by
  the component it names: MCP clients read a tool's schema alone, without the OpenAPI
  document its refs point into.
- `outputSchema` must be an object through protocol 2025-11-25. An `Output` that is an
  object is used as it is; any other (a string, a file, a list, an iterator) is wrapped:
  the schema is `{"type": "object", "properties": {"output": OUTPUT}}` and the
  structured result `{"output": value}` (`{}` for a `None` output). OpenAPI 3.0's
  `nullable` becomes JSON Schema's `"null"` type there, because clients validate the
  structured result against this schema.
"""

from __future__ import annotations

import mimetypes
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import orjson

from cogserve.wire.protocol import Mode

TRAIN_SUFFIX = "-train"
WRAP_KEY = "output"  # where a non-object output goes in the structured result
PREDICTION_META = "cogserve/prediction"  # the result's `_meta` key: id, status, metrics
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]")  # MCP's tool-name alphabet
_MAX_NAME = 128
_REF_PREFIX = "#/components/schemas/"
_SCHEMAS = {Mode.PREDICT: ("Input", "Output"), Mode.TRAIN: ("TrainingInput", "TrainingOutput")}
SHOWN_DATA_URL = 200  # characters of a data: URL kept in the text block


@dataclass(frozen=True)
class Tool:
    """One entry point as an MCP tool."""

    name: str
    mode: Mode
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    output: dict[str, Any]  # the output's own schema (refs resolved), to find its files
    wrapped: bool  # the structured result is {"output": value}

    def definition(self) -> dict[str, Any]:
        """The tool as `tools/list` lists it."""
        return {"name": self.name, "description": self.description,
                "inputSchema": self.input_schema, "outputSchema": self.output_schema}


def tool_name(model_name: str, mode: Mode) -> str:
    """The model's name in MCP's tool-name alphabet (others become `_`), `-train` for
    the training."""
    suffix = TRAIN_SUFFIX if mode is Mode.TRAIN else ""
    base = _NAME_CHARS.sub("_", model_name)[:_MAX_NAME - len(suffix)] or "model"
    return base + suffix


def tools_of(schema: dict[str, Any], model_name: str,
             descriptions: dict[str, str]) -> list[Tool]:
    """The tools of a model whose OpenAPI document is `schema`: one per entry point it has."""
    components = schema["components"]["schemas"]
    tools = []
    for mode, (input_key, output_key) in _SCHEMAS.items():
        if input_key not in components:
            continue
        output = resolve(components.get(output_key, {}), components)
        wrapped = output.get("type") != "object"
        output_schema = ({"type": "object", "properties": {WRAP_KEY: _nullable(output)}}
                         if wrapped else _nullable(output))
        default = ("Run a prediction" if mode is Mode.PREDICT else "Train") + \
            f" with the model {model_name}."
        tools.append(Tool(
            name=tool_name(model_name, mode), mode=mode,
            description=descriptions.get(mode, "") or default,
            input_schema=resolve(components[input_key], components),
            output_schema=output_schema, output=output, wrapped=wrapped))
    return tools


def resolve(node: Any, components: dict[str, Any], seen: frozenset[str] = frozenset()) -> Any:
    """A copy of `node` with each `{"$ref": "#/components/schemas/X"}` replaced by X
    (itself resolved). A ref that names itself again further down is left as it is."""
    if isinstance(node, list):
        return [resolve(item, components, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
        name = ref[len(_REF_PREFIX):]
        if name in components and name not in seen:
            return resolve(components[name], components, seen | {name})
    return {key: resolve(value, components, seen) for key, value in node.items()}


def _nullable(node: Any) -> Any:
    """OpenAPI 3.0's `nullable: true` as JSON Schema says it (`"null"` as a type, or an
    `anyOf` with it), everywhere in `node`."""
    if isinstance(node, list):
        return [_nullable(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _nullable(value) for key, value in node.items() if key != "nullable"}
    if node.get("nullable") is not True:
        return out
    kind = out.get("type")
    if isinstance(kind, str):
        out["type"] = [kind, "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    return {"anyOf": [out, {"type": "null"}]}


# ---------------------------------------------------------------- results

def error_result(message: str, prediction: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool error (`isError: true`): the client's model reads the message and can
    correct its call; it is not a protocol error."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": message}], "isError": True}
    if prediction is not None:
        result["_meta"] = {PREDICTION_META: _summary(prediction)}
    return result


def result_of(tool: Tool, prediction: dict[str, Any]) -> dict[str, Any]:
    """The tool result of a finished prediction (`Prediction.to_dict()`'s shape).

    Succeeded: the output as structured content and as text (a string as it is, anything
    else as JSON, long data: URLs shortened there), then each file output as an image
    (an image in a data: URL) or a resource link (its data: or upload URL). Failed or
    canceled: a tool error saying so. `_meta` carries the prediction's id, status and
    metrics (`GET /predictions/{id}` has the rest, logs included)."""
    status = prediction["status"]
    if status == "failed":
        return error_result(f"prediction failed: {prediction.get('error')}", prediction)
    if status != "succeeded":
        return error_result(f"prediction {status}", prediction)
    output = prediction["output"]
    content: list[dict[str, Any]] = [{"type": "text", "text": _text(output)}]
    content.extend(_file_block(url, path) for url, path in _files(output, tool.output, ""))
    if tool.wrapped:
        structured: Any = {} if output is None else {WRAP_KEY: output}
    else:
        structured = output
    return {"content": content, "structuredContent": structured, "isError": False,
            "_meta": {PREDICTION_META: _summary(prediction)}}


def _summary(prediction: dict[str, Any]) -> dict[str, Any]:
    return {key: prediction.get(key) for key in ("id", "status", "metrics")}


def _text(output: Any) -> str:
    if isinstance(output, str):
        return _shorten(output)
    return orjson.dumps(_shorten_all(output)).decode()


def _shorten_all(value: Any) -> Any:
    if isinstance(value, str):
        return _shorten(value)
    if isinstance(value, list):
        return [_shorten_all(v) for v in value]
    if isinstance(value, dict):
        return {k: _shorten_all(v) for k, v in value.items()}
    return value


def _shorten(text: str) -> str:
    """A data: URL is the file itself, carried whole in the structured result and its
    own content block: the text block names it instead of holding it a third time."""
    if not text.startswith("data:") or len(text) <= SHOWN_DATA_URL:
        return text
    head, _, payload = text.partition(",")
    return f"{head},<{len(payload)} characters omitted>"


def _files(value: Any, schema: dict[str, Any], path: str) -> list[tuple[str, str]]:
    """(url, where) of each file in an output, found by its schema (`format: uri`)."""
    if isinstance(value, str):
        return [(value, path or WRAP_KEY)] if schema.get("format") == "uri" else []
    if isinstance(value, list):
        items = schema.get("items", {})
        return [f for i, v in enumerate(value) for f in _files(v, items, f"{path}[{i}]")]
    if isinstance(value, dict):
        props = schema.get("properties", {})
        return [f for k, v in value.items()
                for f in _files(v, props.get(k, {}), f"{path}.{k}" if path else k)]
    return []


def _file_block(url: str, where: str) -> dict[str, Any]:
    """An image in a data: URL as image content (its base64 as it is); any other file as
    a resource link to its URL, with the media type where it is known."""
    if url.startswith("data:"):
        head, _, payload = url.partition(",")
        media = head[len("data:"):].split(";")[0] or "application/octet-stream"
        if media.startswith("image/") and head.endswith(";base64"):
            return {"type": "image", "data": payload, "mimeType": media}
        return {"type": "resource_link", "uri": url, "name": where, "mimeType": media}
    name = unquote(urlsplit(url).path.rsplit("/", 1)[-1]) or where
    link: dict[str, Any] = {"type": "resource_link", "uri": url, "name": name}
    guessed = mimetypes.guess_type(name)[0]
    if guessed is not None:
        link["mimeType"] = guessed
    return link
