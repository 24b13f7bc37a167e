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
    for name in ("maybe", "maybe_new", "image", "token", "mixed", "blob"):
        assert props[name]["nullable"] is True, name
        assert props[name]["default"] is None, name  # Cog's `"default": null`
    assert props["mixed"]["anyOf"] == [{"type": "integer"}, {"type": "number"},
                                       {"type": "boolean"}]
    assert props["either"]["anyOf"][1] == {"type": "array", "items": {"type": "string"}}
    assert props["blob"]["type"] == "object"  # Annotated[Any, Opaque]: an object, as Cog's


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


COG_RULES = '''
from typing import Annotated, List, NotRequired, Optional, TypedDict

from cog import BaseModel, BaseRunner, Input, Opaque, Path, Secret


class Payload(TypedDict):
    name: str
    count: int


class External:
    pass


class Output(TypedDict):
    name: str
    count: NotRequired[int]
    blob: Annotated[External, Opaque]
    blobs: Annotated[List[External], Opaque]


class Runner(BaseRunner):
    def run(
        self,
        prompt: str = Input(description="Text prompt"),
        api_key: Secret = Input(description="optional", default=None),
        api_key_required: Secret = Input(description="Required API key"),
        seed: int = Input(description="Random seed", default=None),
        text: str | None = Input(default=None),
        note: Optional[str] = Input(description="no default"),
        value: str | float | None = Input(default=None),
        either: str | float | None = Input(description="a union without a default"),
        data: Payload = Input(description="an object"),
        items: list[Payload] | None = None,
        payload: Annotated[External, Opaque] = Input(description="opaque"),
        many: Annotated[List[External], Opaque] = Input(description="opaque list"),
        image: Path = Input(description="Input image", accept="image/*"),
        weights: Optional[Path] = Input(accept=".safetensors,.bin", default=None),
        tags: list[str] = Input(default_factory=lambda: ["a", "b"]),
    ) -> Output:
        return {"name": prompt}
'''


@pytest.fixture(scope="module")
def cog_rules_doc(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("cog-rules")
    (folder / "run.py").write_text(COG_RULES)
    (folder / "cog.yaml").write_text('run: "run.py:Runner"\n')
    return schema_of(folder)


def test_input_default_none_as_cogs_schema(cog_rules_doc):
    """Cog's static schema (pkg/schema/openapi_spec.go and its tests, scripts
    static_schema_secret_optional, union_type, union_input_http): `= Input(default=None)` on
    a type without None is no default (required), except on a Secret; Optional[T] / T | None
    with `default=None` carry `"default": null`; a union without a default is required even
    when it takes None."""
    schema = _input(cog_rules_doc)
    props = schema["properties"]
    assert schema["required"] == ["prompt", "api_key_required", "seed", "either", "data",
                                  "payload", "many", "image"]
    assert props["api_key"] == {"type": "string", "format": "password", "writeOnly": True,
                                "x-cog-secret": True, "nullable": True, "default": None,
                                "title": "Api Key", "description": "optional", "x-order": 1}
    assert "nullable" not in props["api_key_required"] and "default" not in props["seed"]
    assert props["text"]["default"] is None and props["text"]["nullable"] is True
    assert props["value"] == {"anyOf": [{"type": "string"}, {"type": "number"}],
                              "nullable": True, "default": None, "title": "Value",
                              "x-order": 6}
    assert props["note"]["nullable"] is True and "default" not in props["note"]
    assert "default" not in props["either"] and props["either"]["nullable"] is True


def test_typeddict_and_opaque_as_cogs_schema(cog_rules_doc):
    """Scripts typeddict_input, typeddict_output, static_schema_opaque: a TypedDict input is
    an object, an output lists its fields with `required` the keys not NotRequired; Opaque
    is an object, or an array of objects for a list."""
    props = _input(cog_rules_doc)["properties"]
    assert props["data"] == {"type": "object", "title": "Data", "description": "an object",
                             "x-order": 8}
    assert props["items"] == {"type": "array", "items": {"type": "object"}, "nullable": True,
                              "default": None, "title": "Items", "x-order": 9}
    assert props["payload"]["type"] == "object"
    assert props["many"]["type"] == "array" and props["many"]["items"] == {"type": "object"}
    output = cog_rules_doc["components"]["schemas"]["Output"]
    assert output == {"title": "Output", "type": "object", "properties": {
        "name": {"type": "string", "title": "Name"},
        "count": {"type": "integer", "title": "Count"},
        "blob": {"type": "object", "title": "Blob"},
        "blobs": {"type": "array", "items": {"type": "object"}, "title": "Blobs"}},
        "required": ["name", "blob", "blobs"]}


def test_accept_is_published_and_default_factory_is_the_default(cog_rules_doc):
    """Script accept_mime_type: `x-cog-accept` on Path inputs, absent elsewhere."""
    props = _input(cog_rules_doc)["properties"]
    assert props["image"]["x-cog-accept"] == "image/*"
    assert props["weights"]["x-cog-accept"] == ".safetensors,.bin"
    assert [name for name, p in props.items() if "x-cog-accept" in p] == ["image", "weights"]
    assert props["tags"]["default"] == ["a", "b"]


@pytest.mark.parametrize("declaration,message", [
    ('name: str = Input(description="User name", accept="text/plain")',
     'run() parameter "name": accept is only valid on Path or File inputs, not str'),
    ("tags: list[str] = Input(default_factory=lambda: 1 / 0)",
     'run() parameter "tags": default_factory Runner.<lambda> failed: ZeroDivisionError: '
     'division by zero'),
])
def test_definition_errors_of_the_new_keywords(tmp_path, declaration, message):
    """Script accept_mime_type_error: accept on a str input is refused at load."""
    (tmp_path / "run.py").write_text(
        "from cog import BaseRunner, Input\n\nclass Runner(BaseRunner):\n"
        f"    def run(self, {declaration}) -> str:\n        return ''\n")
    (tmp_path / "cog.yaml").write_text('run: "run.py:Runner"\n')
    result = cogserve("schema", tmp_path)
    assert result.returncode == 1
    assert message in result.stderr
