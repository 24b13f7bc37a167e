"""The MCP tools' rules, in-process: names, schemas (refs, wrapping, nullable) and results."""

from __future__ import annotations

import base64
from typing import Any

from cogserve.mcp.tools import error_result, resolve, result_of, tool_name, tools_of
from cogserve.wire.protocol import Mode


def document(output: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"components": {"schemas": {
        "Input": {"type": "object", "properties": {
            "color": {"allOf": [{"$ref": "#/components/schemas/color"}], "x-order": 0}}},
        "color": {"title": "color", "enum": ["red", "blue"], "type": "string"},
        "Output": output, **extra}}}


def test_names_keep_to_mcps_alphabet():
    assert tool_name("hello-world", Mode.PREDICT) == "hello-world"
    assert tool_name("my model/v1:2", Mode.PREDICT) == "my_model_v1_2"
    assert tool_name("m", Mode.TRAIN) == "m-train"
    assert tool_name("", Mode.PREDICT) == "model"
    assert len(tool_name("x" * 300, Mode.TRAIN)) == 128


def test_refs_are_replaced_by_their_components():
    (tool,) = tools_of(document({"type": "string"}), "m", {})
    assert tool.input_schema["properties"]["color"] == {
        "allOf": [{"title": "color", "enum": ["red", "blue"], "type": "string"}], "x-order": 0}


def test_a_ref_to_itself_stops_there():
    components = {"Node": {"type": "object",
                           "properties": {"next": {"$ref": "#/components/schemas/Node"}}}}
    out = resolve({"$ref": "#/components/schemas/Node"}, components)
    assert out["properties"]["next"] == {"$ref": "#/components/schemas/Node"}


def test_an_object_output_is_the_output_schema_and_others_are_wrapped():
    obj = {"type": "object", "properties": {"n": {"type": "integer", "nullable": True}}}
    (tool,) = tools_of(document(obj), "m", {"predict": "Counts."})
    assert not tool.wrapped and tool.description == "Counts."
    assert tool.output_schema == {"type": "object",
                                  "properties": {"n": {"type": ["integer", "null"]}}}
    (tool,) = tools_of(document({"type": "array", "items": {"type": "string"}}), "m", {})
    assert tool.wrapped and tool.output_schema == {
        "type": "object", "properties": {"output": {"type": "array", "items": {"type": "string"}}}}
    assert tool.description == "Run a prediction with the model m."


def test_nullable_without_a_type_becomes_any_of_null():
    out = {"allOf": [{"$ref": "#/components/schemas/color"}], "nullable": True}
    (tool,) = tools_of(document(out), "m", {})
    assert tool.output_schema["properties"]["output"] == {"anyOf": [
        {"allOf": [{"title": "color", "enum": ["red", "blue"], "type": "string"}]},
        {"type": "null"}]}


def test_a_training_entry_point_is_a_second_tool():
    doc = document({"type": "string"}, TrainingInput={"type": "object", "properties": {}},
                   TrainingOutput={"type": "string"})
    tools = tools_of(doc, "m", {"train": "Trains."})
    assert [(t.name, t.mode, t.description) for t in tools] == [
        ("m", Mode.PREDICT, "Run a prediction with the model m."),
        ("m-train", Mode.TRAIN, "Trains.")]


def prediction(status: str, output: Any = None, error: str | None = None) -> dict[str, Any]:
    return {"id": "p1", "status": status, "output": output, "error": error,
            "metrics": {"predict_time": 0.5}, "logs": "x"}


def test_a_string_output_is_text_and_structured():
    (tool,) = tools_of(document({"type": "string"}), "m", {})
    result = result_of(tool, prediction("succeeded", "hi"))
    assert result == {"content": [{"type": "text", "text": "hi"}],
                      "structuredContent": {"output": "hi"}, "isError": False,
                      "_meta": {"cogserve/prediction": {"id": "p1", "status": "succeeded",
                                                        "metrics": {"predict_time": 0.5}}}}
    assert result_of(tool, prediction("succeeded", None))["structuredContent"] == {}


def test_files_are_images_or_resource_links_and_the_text_names_them_short():
    schema = {"type": "object", "properties": {
        "pictures": {"type": "array", "items": {"type": "string", "format": "uri"}},
        "report": {"type": "string", "format": "uri"},
        "caption": {"type": "string"}}}
    (tool,) = tools_of(document(schema), "m", {})
    png = "data:image/png;base64," + base64.b64encode(b"\x89PNG" * 100).decode()
    output = {"pictures": [png, "https://up.example/out/a%20b.jpg"],
              "report": "data:text/csv;base64,YSxi", "caption": "https://not.a/file"}
    result = result_of(tool, prediction("succeeded", output))
    text, image, uploaded, report = result["content"]
    assert result["structuredContent"] == output
    assert image == {"type": "image", "data": png.partition(",")[2], "mimeType": "image/png"}
    assert uploaded == {"type": "resource_link", "uri": "https://up.example/out/a%20b.jpg",
                        "name": "a b.jpg", "mimeType": "image/jpeg"}
    assert report == {"type": "resource_link", "uri": "data:text/csv;base64,YSxi",
                      "name": "report", "mimeType": "text/csv"}
    assert f'"data:image/png;base64,<{len(png.partition(",")[2])} characters omitted>"' \
        in text["text"]
    assert "YSxi" in text["text"]  # short data: URLs stay whole


def test_failed_and_canceled_are_tool_errors():
    (tool,) = tools_of(document({"type": "string"}), "m", {})
    failed = result_of(tool, prediction("failed", error="boom"))
    assert failed["isError"] and failed["content"][0]["text"] == "prediction failed: boom"
    assert failed["_meta"]["cogserve/prediction"]["status"] == "failed"
    canceled = result_of(tool, prediction("canceled"))
    assert canceled["isError"] and canceled["content"][0]["text"] == "prediction canceled"
    assert error_result("no") == {"content": [{"type": "text", "text": "no"}], "isError": True}
