"""The OpenAPI schema derived from a model's signature, as `cogserve schema` prints it.

Each test reads the document of one contract model (tests/models/contract/) through the
real `cogserve schema` command; one reads it from a running server's /openapi.json.
"""

from __future__ import annotations

import json

import pytest
from cli_harness import CONTRACT, cogserve, schema_of


@pytest.fixture(scope="module")
def inputs_doc() -> dict:
    return schema_of("inputs")


def _input(doc: dict) -> dict:
    return doc["components"]["schemas"]["Input"]


def test_properties_follow_signature_order_with_x_order_and_titles(inputs_doc):
    props = _input(inputs_doc)["properties"]
    names = list(props)
    assert names[:4] == ["text", "count", "ratio", "flag"]
    assert names[-2:] == ["blob", "plain"]
    assert [p["x-order"] for p in props.values()] == list(range(len(names)))
    assert props["maybe_new"]["title"] == "Maybe New"
    assert props["text"]["description"] == "Some text"
    assert "description" not in props["count"]


def test_required_holds_only_inputs_without_default(inputs_doc):
    assert _input(inputs_doc)["required"] == ["text"]


def test_primitive_types_defaults_and_constraints(inputs_doc):
    props = _input(inputs_doc)["properties"]
    assert props["text"] == {"type": "string", "minLength": 1, "maxLength": 8,
                             "pattern": "^[a-z]+$", "title": "Text",
                             "description": "Some text", "x-order": 0}
    assert props["count"] == {"type": "integer", "minimum": 1, "maximum": 10, "default": 3,
                              "title": "Count", "x-order": 1}
    assert props["ratio"]["type"] == "number"
    assert (props["ratio"]["minimum"], props["ratio"]["maximum"]) == (0.0, 1.0)
    assert props["flag"]["type"] == "boolean" and props["flag"]["default"] is False
    assert props["plain"]["default"] == 7  # a plain Python default works like Input(default=)
    assert props["old"]["deprecated"] is True


def test_files_are_uris_and_secrets_are_marked(inputs_doc):
    props = _input(inputs_doc)["properties"]
    assert props["image"]["type"] == "string" and props["image"]["format"] == "uri"
    assert props["handle"]["format"] == "uri"  # the deprecated File too
    assert props["files"]["items"] == {"type": "string", "format": "uri"}
    assert props["token"]["format"] == "password"
    assert props["token"]["x-cog-secret"] is True
    assert props["token"]["writeOnly"] is True


def test_lists_dicts_optionals_and_unions(inputs_doc):
    props = _input(inputs_doc)["properties"]
    assert props["words"]["items"] == {"type": "string"}
    assert props["words"]["minItems"] == 1 and props["words"]["default"] == ["a"]
    assert props["numbers"]["items"] == {"type": "integer", "minimum": 0}
    assert props["extra"]["type"] == "object" and props["anything"]["type"] == "object"
    for name in ("maybe", "maybe_new", "image", "token"):
        assert props[name]["nullable"] is True, name
        assert "default" not in props[name]
    assert props["mixed"]["anyOf"] == [{"type": "integer"}, {"type": "number"},
                                       {"type": "boolean"}]
    assert props["either"]["anyOf"][1] == {"type": "array", "items": {"type": "string"}}
    assert "type" not in props["blob"]  # Annotated[Any, Opaque]: no constraint at all


def test_choices_and_literals_become_enum_components(inputs_doc):
    schemas = inputs_doc["components"]["schemas"]
    props = schemas["Input"]["properties"]
    assert props["color"]["allOf"] == [{"$ref": "#/components/schemas/color"}]
    assert props["color"]["default"] == "red"
    assert schemas["color"] == {"title": "color", "description": "An enumeration.",
                                "enum": ["red", "green", "blue"], "type": "string"}
    assert schemas["size"]["type"] == "integer" and schemas["size"]["enum"] == [1, 2, 3]
    assert schemas["mode"]["enum"] == ["fast", "slow"]  # Literal["fast", "slow"]


@pytest.mark.parametrize("model,expected", [
    ("out_str", {"title": "Output", "type": "string"}),
    ("out_path", {"title": "Output", "type": "string", "format": "uri"}),
    ("out_list_path", {"title": "Output", "type": "array",
                       "items": {"type": "string", "format": "uri"}}),
    ("inputs", {"title": "Output", "type": "object"}),
    ("function_runner", {"title": "Output", "type": "integer"}),
    ("out_iterator", {"title": "Output", "type": "array", "items": {"type": "integer"},
                      "x-cog-array-type": "iterator"}),
    ("out_async_iterator", {"title": "Output", "type": "array", "items": {"type": "string"},
                            "x-cog-array-type": "iterator"}),
    ("out_concat", {"title": "Output", "type": "array", "items": {"type": "string"},
                    "x-cog-array-type": "iterator", "x-cog-array-display": "concatenate"}),
])
def test_output_schema(model, expected):
    assert schema_of(model)["components"]["schemas"]["Output"] == expected


def test_cog_basemodel_output_is_an_object_with_required_and_nullable_fields():
    output = schema_of("out_cog_model")["components"]["schemas"]["Output"]
    assert output["type"] == "object"
    assert output["required"] == ["label", "score", "tags"]
    assert list(output["properties"]) == ["label", "score", "tags", "note", "file"]
    assert output["properties"]["score"] == {"type": "number", "title": "Score"}
    assert output["properties"]["tags"]["items"] == {"type": "string"}
    assert output["properties"]["note"] == {"type": "string", "nullable": True, "title": "Note"}
    assert output["properties"]["file"]["format"] == "uri"


def test_pydantic_basemodel_output():
    output = schema_of("out_pydantic")["components"]["schemas"]["Output"]
    assert output["required"] == ["label", "count"]
    assert output["properties"]["count"] == {"type": "integer", "title": "Count"}
    assert output["properties"]["note"]["nullable"] is True


def test_streaming_is_declared_on_the_predictions_path():
    assert schema_of("out_concat")["paths"]["/predictions"]["post"]["x-cog-streaming"] is True
    assert "x-cog-streaming" not in schema_of("out_iterator")["paths"]["/predictions"]["post"]


def test_deprecated_predictor_and_function_runner():
    props = _input(schema_of("deprecated_predictor"))["properties"]
    assert props == {"text": {"type": "string", "default": "old", "title": "Text",
                              "description": "text", "x-order": 0}}
    doc = schema_of("function_runner")
    assert _input(doc)["required"] == ["a"]
    assert _input(doc)["properties"]["a"]["minimum"] == 0


def test_training_entry_point_gets_its_own_components_and_paths():
    doc = schema_of("train_entry")
    schemas = doc["components"]["schemas"]
    assert schemas["TrainingInput"]["properties"]["epochs"]["description"] == (
        "passes over the data")
    assert schemas["TrainingOutput"]["type"] == "string"
    assert "/trainings" in doc["paths"]
    assert "/trainings" not in schema_of("out_str")["paths"]


def test_schema_writes_a_file_with_o(tmp_path):
    target = tmp_path / ".cog" / "openapi_schema.json"
    result = cogserve("schema", CONTRACT / "out_str", "-o", target)
    assert result.returncode == 0 and result.stdout == ""
    assert json.loads(target.read_text())["components"]["schemas"]["Output"]["type"] == "string"


def test_schema_with_predictor_flag_and_no_cog_yaml(tmp_path):
    (tmp_path / "model.py").write_text(
        "from cog import Input\n\n"
        "def go(x: float = Input(default=1.5, le=2)) -> float:\n    return x\n")
    result = cogserve("schema", tmp_path, "--predictor", "model.py:go")
    assert result.returncode == 0, result.stderr
    props = json.loads(result.stdout)["components"]["schemas"]["Input"]["properties"]
    assert props["x"]["default"] == 1.5 and props["x"]["maximum"] == 2


def test_server_serves_the_same_document(serve):
    server = serve(CONTRACT / "inputs")
    served = server.client.get("/openapi.json").json()
    assert served["components"]["schemas"]["Input"] == _input(schema_of("inputs"))


def test_secret_defaults_are_not_published_and_int_bounds_stay_ints(tmp_path):
    (tmp_path / "model.py").write_text(
        "from cog import Input, Secret\n\n"
        "def go(key: Secret = Input(default=Secret('sk-123')), plain: Secret = 'sk-456',\n"
        "       n: int = Input(default=1, ge=0.0, le=5.0)) -> str:\n"
        "    return key.get_secret_value() + plain.get_secret_value() + str(n)\n")
    result = cogserve("schema", tmp_path, "--predictor", "model.py:go")
    assert result.returncode == 0, result.stderr
    assert "sk-123" not in result.stdout and "sk-456" not in result.stdout
    props = json.loads(result.stdout)["components"]["schemas"]["Input"]["properties"]
    assert props["key"]["default"] == "**********"
    assert (props["n"]["minimum"], props["n"]["maximum"]) == (0, 5)
    assert isinstance(props["n"]["minimum"], int)
    predicted = cogserve("predict", tmp_path, "--predictor", "model.py:go", cwd=tmp_path)
    assert predicted.stdout == "sk-123sk-4561\n"  # the model still gets the real default


def test_prints_while_loading_go_to_stderr_not_into_the_json(tmp_path):
    (tmp_path / "model.py").write_text(
        "import os\nprint('loading at import')\nos.system('echo from a child')\n\n"
        "class Runner:\n    def __init__(self):\n        print('constructing')\n\n"
        "    def run(self, x: int) -> int:\n        return x\n")
    result = cogserve("schema", tmp_path, "--predictor", "model.py:Runner")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["components"]["schemas"]["Input"]["required"] == ["x"]
    for line in ("loading at import", "from a child", "constructing"):
        assert line in result.stderr


def test_train_class_schema_skips_self(tmp_path):
    (tmp_path / "model.py").write_text(
        "from cog import BaseRunner\n\nclass Runner(BaseRunner):\n"
        "    def run(self, x: int) -> int:\n        return x\n\n"
        "    def train(self, steps: int = 3) -> str:\n        return str(steps)\n")
    (tmp_path / "cog.yaml").write_text('run: "model.py:Runner"\ntrain: "model.py:Runner"\n')
    result = cogserve("schema", tmp_path)
    assert result.returncode == 0, result.stderr
    props = json.loads(result.stdout)["components"]["schemas"]["TrainingInput"]["properties"]
    assert list(props) == ["steps"]
