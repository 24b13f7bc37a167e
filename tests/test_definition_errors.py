"""A broken model is reported with one sentence naming the file, the line and the parameter.

`cogserve predict` and `cogserve schema` print it on stderr and exit non-zero;
`cogserve serve` stays up and shows it in /health-check `setup.logs` with SETUP_FAILED.
"""

from __future__ import annotations

import pytest
from cli_harness import CONTRACT, cogserve
from harness import write_model

ERRORS = CONTRACT / "errors"

CASES = {
    "missing_file": f"nope.py: no such file in {ERRORS / 'missing_file'} (the model reference "
                    "is 'nope.py:Runner')",
    "missing_class": "run.py: no class or function named 'Runner' in it (the model reference "
                     "is 'run.py:Runner')",
    "no_run": "run.py:6: class Runner has no run() (or the deprecated predict()) method",
    "import_error": "run.py:5: importing run.py failed: ModuleNotFoundError: No module named "
                    f"'no_such_module_for_cogserve'; {ERRORS / 'import_error' / 'cog.yaml'} "
                    'does not declare it: add `- "no_such_module_for_cogserve"` under '
                    "build.python_packages (or a line to the build.python_requirements file) "
                    "and cogserve installs it",
    "unsupported_input": 'run.py:10: Runner.run() parameter "tags": unsupported input type '
                         "set[int]; use str, int, float, bool, Path, File, Secret, list[...], "
                         "dict, Optional[...], a union of JSON types or Literal[...]",
    "unsupported_output": "run.py:7: Runner.run(): unsupported output type set; use str, int, "
                          "float, bool, Path, File, list[...], dict, a BaseModel, or an "
                          "Iterator of those",
    "bad_default": 'run.py:10: Runner.run() parameter "steps": the default is invalid for '
                   "its own declaration: 20 is greater than the maximum of 10",
    "bad_choice_default": 'run.py:7: Runner.run() parameter "color": the default is invalid '
                          'for its own declaration: "pink" is not one of ["red","blue"]',
    "bad_regex": 'run.py:7: Runner.run() parameter "text": regex \'([a-z\' does not compile: '
                 "unterminated character set at position 1",
    "concurrent_sync": "run.py:7: @concurrent(max=2) needs an async run(); a sync run() "
                       "serves one prediction at a time",
    "union_path": 'run.py:7: Runner.run() parameter "source": unsupported type Path | str: '
                  "union members must be str, int, float, bool, dict or list (not Path, File, "
                  "Secret or a model)",
    "optional_return": "run.py:9: Runner.run(): the return type Optional[str] is a union or "
                       "Optional; return one type (use a BaseModel with optional fields)",
    "no_return": "run.py:7: Runner.run(): has no return type annotation (the output type is "
                 "required)",
    "no_annotation": 'run.py:7: Runner.run() parameter "text": has no type annotation',
    "batch_not_list": 'run.py:7: Runner.run() parameter "n": @batch: is int; a batched run() '
                      "takes list[T] for every input and returns list[T] (one item per "
                      "request, in order)",
    "batch_zero": "run.py:5: @batch(max_size=0): max_size must be an integer of at least 1 "
                  "(the largest batch)",
}


@pytest.mark.parametrize("model", sorted(CASES))
def test_cogserve_predict_prints_one_clear_sentence(model, tmp_path):
    result = cogserve("predict", ERRORS / model, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == f"error: {CASES[model]}\n"
    assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("model", ["bad_default", "missing_class", "import_error"])
def test_cogserve_schema_fails_the_same_way(model):
    result = cogserve("schema", ERRORS / model)
    assert result.returncode == 1
    assert result.stderr.strip() == f"error: {CASES[model]}"


@pytest.mark.parametrize("model", ["bad_default", "no_run", "import_error", "union_path",
                                   "batch_zero"])
def test_server_reports_it_in_health_check(serve, model):
    server = serve(ERRORS / model, wait="SETUP_FAILED")
    health = server.health()
    assert health["status"] == "SETUP_FAILED"
    assert health["setup"]["status"] == "failed"
    assert CASES[model] in health["setup"]["logs"]
    r = server.predict()
    assert r.status_code == 503
    assert server.process.poll() is None  # the server stays up to say why


def test_syntax_error_names_the_line(tmp_path):
    model = write_model(tmp_path / "m", "from cog import BaseRunner\n\n\n"
                        "class Runner(BaseRunner):\n    def run(self) -> str\n"
                        "        return 'x'\n")
    result = cogserve("predict", model, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == ("error: run.py:5: importing run.py failed: SyntaxError: "
                             "expected ':' (run.py, line 5)\n")


def test_no_cog_yaml_and_no_predictor():
    result = cogserve("predict", ERRORS / "no_cog_yaml")
    assert result.returncode == 1
    assert result.stderr == (f"error: {ERRORS / 'no_cog_yaml'}: no cog.yaml here and no "
                             "--predictor given\n")


def test_predictor_flag_naming_a_missing_function(tmp_path):
    (tmp_path / "model.py").write_text("def go(x: int) -> int:\n    return x\n")
    result = cogserve("predict", tmp_path, "--predictor", "model.py:gone", "-i", "x=1")
    assert result.returncode == 1
    assert "model.py: no class or function named 'gone'" in result.stderr


def test_setup_failure_prints_the_traceback_then_one_line(tmp_path):
    result = cogserve("predict", ERRORS / "setup_error", cwd=tmp_path)
    assert result.returncode == 1
    assert 'raise RuntimeError("weights are corrupt")' in result.stderr  # the author's frame
    assert result.stderr.endswith("error: setup() failed: RuntimeError: weights are corrupt\n")
    assert result.stdout == ""


def test_a_model_file_named_like_a_stdlib_module_still_loads(tmp_path):
    model = write_model(tmp_path / "m", "from cog import BaseRunner\n\n\n"
                        "class Runner(BaseRunner):\n    def run(self, x: int = 2) -> int:\n"
                        "        return x * 2\n", cog_yaml='run: "types.py:Runner"\n',
                        name="types.py")
    result = cogserve("predict", model, "-i", "x=21", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "42\n"), result.stderr


@pytest.mark.parametrize("signature,message", [
    ("x: str | list[Path]", 'parameter "x": unsupported type str | list[Path]: union members '
                            "must be str, int, float, bool, dict or list"),
    ("x: list[int] = Input(regex='^1$')", 'parameter "x": regex applies to str inputs, not '
                                          "list[int]"),
    ("x: int = Input(min_length=1)", 'parameter "x": min_length/max_length apply to str and '
                                     "list inputs, not int"),
    ("x: str = Input(ge=1)", 'parameter "x": ge/le apply to int and float inputs, not str'),
    ("x: list[str] = Input(choices=['a'])", 'parameter "x": choices apply to str and int '
                                            "inputs, not list[str]"),
    ("x: int = Input(choices=[1, 'two'])", "parameter \"x\": choice 'two' is not an int"),
    ("x: Literal['a', 1]", "parameter \"x\": unsupported type Literal['a', 1]: Literal values "
                           "must be all str or all int"),
    ("x: int = 'five'", 'parameter "x": the default is invalid for its own declaration: '
                        '"five" is not of type "integer"'),
    ("*args: int", 'parameter "args": *args and **kwargs cannot be inputs'),
    ("x: int, /", 'parameter "x": is positional-only (before `/`); inputs are passed by name'),
])
def test_input_declaration_errors(tmp_path, signature, message):
    source = ("from typing import Literal\n\nfrom cog import Input, Path\n\n\n"
              f"def run({signature}) -> str:\n    return 'x'\n")
    model = write_model(tmp_path / "m", source, cog_yaml='run: "run.py:run"\n')
    result = cogserve("schema", model)
    assert result.returncode == 1
    assert result.stderr.startswith("error: run.py:6: run() ")
    assert message in result.stderr


@pytest.mark.parametrize("cog_yaml,message", [
    ("run: [run.py, Runner]\n", "cog.yaml: `run:` must be a string like \"run.py:Runner\", "
                                "not ['run.py', 'Runner']"),
    ("run: 'run.py'\n", "'run.py' is not a model reference: expected FILE.py:NAME"),
    ("run: 'run.py:Runner'\nconcurrency:\n  max: lots\n",
     "cog.yaml: concurrency.max must be an integer"),
    ("run: 'run.py:Runner'\nenvironment:\n  - NOEQUALS\n",
     "cog.yaml: environment entry 'NOEQUALS' is not KEY=VALUE"),
    ("run: 'run.py:Runner\n", "cog.yaml: not valid YAML"),
])
def test_bad_cog_yaml(tmp_path, cog_yaml, message):
    model = write_model(tmp_path / "m", "def run() -> str:\n    return 'x'\n", cog_yaml=cog_yaml)
    result = cogserve("predict", model, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert "Traceback" not in result.stderr
