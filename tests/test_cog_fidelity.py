"""What a Cog model and a Cog client can tell apart, checked against the reference's
behaviour (Cog 0.23.1 / coglet 0.23.1): the `cog` package's names and modules, the
deprecated names, `current_scope().context`, `cog.__version__`, COG_WEIGHTS, unions,
metric name rules and healthcheck texts."""

from __future__ import annotations

import json
import platform
from collections.abc import Iterator

import pytest
from cli_harness import cogserve
from harness import Server, write_model

import cogserve as cogserve_package

MODEL = '''
import json
import warnings

import cog
import cog.input
import cog.model
import cog.predictor
import cog.types
from cog import BasePredictor, ExperimentalFeatureWarning, Path, current_scope, emit_metric
from cog.input import FieldInfo
from cog.types import URLFile, URLPath

warnings.filterwarnings("ignore", category=ExperimentalFeatureWarning)


class Predictor(BasePredictor):
    def setup(self, weights: Path = None) -> None:
        self.weights = f"{type(weights).__name__}:{weights}"

    def predict(self, what: str = "names", x: int | float = 0, y: float | int = 0,
                metric: str = "") -> str:
        if what == "names":
            return json.dumps(dir(cog))
        if what == "modules":
            import sys
            return " ".join(name for name in ("cog.types", "cog.input", "cog.model",
                                              "cog.predictor")
                            if sys.modules[name] is getattr(cog, name[4:]))
        if what == "classes":
            return " ".join(c.__name__ for c in (URLFile, URLPath, FieldInfo,
                                                 type(cog.Input(default=1))))
        if what == "version":
            return cog.__version__
        if what == "python":
            import platform
            return platform.python_version()
        if what == "context":
            return json.dumps(current_scope().context)
        if what == "weights":
            return self.weights
        if what == "union":
            return f"{type(x).__name__} {type(y).__name__}"
        if what == "metric":
            current_scope().record_metric(metric, 1)
        if what == "emit":
            emit_metric("first", 2)
            cog.emit_metric("second", 3)
        return what
'''

# `dir(cog)` of Cog 0.23.1, less dunder and private names
REFERENCE_NAMES = [
    "AsyncConcatenateIterator", "BaseModel", "BasePredictor", "BaseRunner", "Callable",
    "CancelationException", "ConcatenateIterator", "FieldInfo", "File", "Input", "Opaque",
    "Path", "Secret", "TypeVar", "URLFile", "URLPath", "__version__", "concurrent",
    "current_scope", "input", "model", "overload", "predictor", "streaming", "types",
]
EXPERIMENTAL = ("cog: ExperimentalFeatureWarning is deprecated and will be removed in a "
                "future release. Remove `ExperimentalFeatureWarning` from your imports and any "
                "associated `warnings.filterwarnings(...)` calls.")
EMIT = ("cog: emit_metric() is deprecated and will be removed in a future release. Use "
        "current_scope().record_metric(name, value) instead.")


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    folder = write_model(tmp_path_factory.mktemp("fidelity"), MODEL,
                         'predict: "predict.py:Predictor"\n', name="predict.py")
    with Server(folder, env={"COG_WEIGHTS": "https://example.com/w.tar"}) as running:
        yield running


def run(server: Server, **inputs: object) -> dict:
    body = server.predict(**inputs).json()
    return body


def test_every_name_of_the_cog_package(server):
    names = json.loads(run(server, what="names")["output"])
    assert sorted(set(REFERENCE_NAMES) - set(names)) == []
    assert run(server, what="modules")["output"] == "cog.types cog.input cog.model cog.predictor"
    assert run(server, what="classes")["output"] == "URLFile URLPath FieldInfo FieldInfo"


def test_deprecated_names_warn_once_and_emit_metric_records(server):
    setup_logs = server.health()["setup"]["logs"]  # imported at load: warned then
    assert setup_logs.count(EXPERIMENTAL) == 1
    assert setup_logs.count(EMIT) == 1
    body = run(server, what="emit")
    assert body["status"] == "succeeded", body
    assert body["metrics"]["first"] == 2 and body["metrics"]["second"] == 3
    assert "deprecated" not in body["logs"]  # not again


def test_cog_version_is_the_compatible_cog_release(server):
    assert run(server, what="version")["output"] == "0.23.1"


def test_health_check_versions_are_what_runs_the_model(server):
    # coglet's keys where it has them: python_sdk is the `cog` the model imports, python
    # the model's interpreter (the worker's: the test's own here); cogserve's own apart
    python = run(server, what="python")["output"]
    assert server.health()["version"] == {"cogserve": cogserve_package.__version__,
                                          "python_sdk": "0.23.1", "python": python}
    assert python == platform.python_version()
    assert server.client.get("/").json()["cog_version"] == "0.23.1"  # as coglet's root


def test_setup_weights_is_cog_weights_as_a_string(server):
    assert run(server, what="weights")["output"] == "str:https://example.com/w.tar"


def test_context_reaches_the_model(server):
    r = server.client.post("/predictions", json={"input": {"what": "context"},
                                                 "context": {"user": "ada", "tier": "pro"}})
    assert json.loads(r.json()["output"]) == {"user": "ada", "tier": "pro"}
    assert json.loads(run(server, what="context")["output"]) == {}


@pytest.mark.parametrize("context", [{"n": 1}, "text", ["a"], {"a": None}])
def test_a_context_that_is_not_an_object_of_strings_is_422(server, context):
    r = server.client.post("/predictions", json={"input": {}, "context": context})
    assert r.status_code == 422 and r.headers["content-type"] == "text/plain; charset=utf-8"
    assert r.text.startswith("Failed to deserialize the JSON body into the target type: "
                             "context: ")


def test_an_integer_for_a_union_with_int_stays_an_int(server, tmp_path):
    assert run(server, what="union", x=1, y=1)["output"] == "int int"
    assert run(server, what="union", x=1.5, y=2.5)["output"] == "float float"
    cli = cogserve("predict", server.directory, "-i", "what=union", "-i", "x=1", "-i", "y=1",
                   cwd=tmp_path)
    assert cli.stdout == "int int\n", cli.stderr


@pytest.mark.parametrize("name,message", [
    ("a__b", "metric name segment 'a__b' must not contain consecutive underscores"),
    ("1abc", "metric name segment '1abc' must start with a letter"),
    ("_x", "metric name segment '_x' must start with a letter"),
    ("a-b", "metric name segment 'a-b' contains invalid character '-'"),
    ("ab_", "metric name segment 'ab_' must end with a letter or digit"),
    ("a..b", "metric name must not contain empty segments (consecutive dots)"),
    (".a", "metric name must not start with a dot"),
    ("a.", "metric name must not end with a dot"),
    ("a.b.c.d.e", "metric name must have at most 4 dot-separated segments (got 5)"),
    ("x" * 129, "metric name must be 128 characters or fewer (got 129 characters)"),
    ("cog.x", "the 'cog.' prefix is reserved for system metrics"),
])
def test_invalid_metric_names_fail_with_the_reference_messages(server, name, message):
    body = run(server, what="metric", metric=name)
    assert body["status"] == "failed"
    assert body["error"] == f"Prediction failed: Prediction failed: ValueError: {message}"


def test_valid_metric_names(server):
    body = run(server, what="metric", metric="a.b_c1")
    assert body["status"] == "succeeded", body
    assert body["metrics"]["a"] == {"b_c1": 1}
