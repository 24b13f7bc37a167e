"""`cogserve predict | run | train` print, write and refuse what `cog` does (pkg/cli/predict.go,
pkg/predict/input_validation.go): --json's whole prediction, @file / @- / - inputs, -o,
no output, and `cog`'s input messages before the model loads."""

from __future__ import annotations

import json

import pytest
from cli_harness import cogserve
from harness import write_model

MODEL = '''
import os
import pathlib

from cog import BaseRunner, Input


class Runner(BaseRunner):
    def setup(self) -> None:
        print("setting up")
        marker = os.environ.get("SETUP_MARKER")
        if marker:
            pathlib.Path(marker).write_text("ran")

    def run(
        self,
        text: str = Input(default="hi", max_length=5, regex="^[a-z]+$"),
        count: int = Input(default=1, ge=1, le=3),
        size: str = Input(default="small", choices=["small", "medium", "large"]),
        shape: str = "plain",
        nothing: bool = False,
    ) -> str:
        print(f"running {text}")
        if nothing:
            return None
        if shape == "number":
            return 7
        return (text * count) + ("&<>" if shape == "html" else "")
'''

NUMBER_MODEL = '''
from cog import BaseRunner


class Runner(BaseRunner):
    def run(self, n: int = 2, none: bool = False) -> float:
        return None if none else float(n)
'''


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return write_model(tmp_path_factory.mktemp("cli-output"), MODEL)


def test_json_prints_the_whole_prediction_indented(model, tmp_path):
    result = cogserve("predict", model, "--json", '{"text": "ab", "count": 2}', cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["status"] == "succeeded"
    assert doc["output"] == "abab"
    assert doc["logs"] == "running ab\n"
    assert doc["input"] == {"text": "ab", "count": 2}
    assert doc["metrics"]["predict_time"] >= 0
    assert result.stdout.startswith('{\n  "status": "succeeded",\n  "output": "abab",\n')
    assert "setting up" in result.stderr  # setup's output, as it ran


@pytest.mark.parametrize("how", ["@-", "-"])
def test_json_from_standard_input(model, tmp_path, how):
    result = cogserve("predict", model, "--json", how, stdin='{"text": "xy"}', cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["output"] == "xy"


def test_json_from_a_file_and_at_file_values(model, tmp_path):
    (tmp_path / "inputs.json").write_text('{"text": "@word.txt"}')
    (tmp_path / "word.txt").write_text("zz")
    result = cogserve("predict", model, "--json", "@inputs.json", cwd=tmp_path)
    # a "@file" value is that file as a data URL, as `cog` sends it: not a-z, so refused
    assert result.returncode == 2
    assert result.stderr.startswith('error: invalid input "text": ')
    (tmp_path / "inputs.json").write_text('{"text": "qq", "count": 3}')
    result = cogserve("predict", model, "--json", "@inputs.json", cwd=tmp_path)
    assert json.loads(result.stdout)["output"] == "qqqqqq"


def test_bad_json_arguments_are_refused_before_the_model_starts(model, tmp_path):
    marker = tmp_path / "setup"
    env = {"SETUP_MARKER": str(marker)}
    missing = cogserve("predict", model, "--json", "@nope.json", cwd=tmp_path, env=env)
    assert (missing.returncode, missing.stderr) == (
        2, "error: Failed to read JSON from file 'nope.json': No such file or directory\n")
    garbage = cogserve("predict", model, "--json", "@-", stdin="{not json", cwd=tmp_path,
                       env=env)
    assert garbage.returncode == 2
    assert garbage.stderr.startswith("error: Failed to parse JSON: ")
    unreadable = cogserve("predict", model, "--json", '{"text": "@gone.txt"}', cwd=tmp_path,
                          env=env)
    assert unreadable.returncode == 2
    assert unreadable.stderr == ("error: input 'text': failed to read file 'gone.txt': "
                                 "No such file or directory\n")
    assert not marker.exists()


def test_o_writes_a_string_as_text_and_with_json_the_whole_prediction(model, tmp_path):
    text = cogserve("predict", model, "-i", "text=abc", "-o", "out.txt", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert (tmp_path / "out.txt").read_text() == "abc"
    assert text.stdout == ""
    assert "Written output to: out.txt\n" in text.stderr
    whole = cogserve("predict", model, "--json", '{"text": "abc"}', "-o", "result.json",
                     cwd=tmp_path)
    assert whole.stdout == ""
    assert json.loads((tmp_path / "result.json").read_text())["output"] == "abc"
    odd = cogserve("predict", model, "--json", "{}", "-o", "result.txt", cwd=tmp_path)
    assert "--output value does not have a .json suffix: result.txt" in odd.stderr
    folder = tmp_path / "outdir"
    folder.mkdir()
    into = cogserve("predict", model, "-o", "outdir", cwd=tmp_path)
    assert (folder / "output").read_text() == "hi"
    assert into.returncode == 0


def test_o_writes_other_values_as_json_like_go(tmp_path):
    model = write_model(tmp_path / "m", NUMBER_MODEL)
    result = cogserve("predict", model, "-o", "n.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "n.json").read_text() == "2"  # a whole float prints as Go does


def test_json_escapes_as_go_does(model, tmp_path):
    result = cogserve("predict", model, "--json", '{"shape": "html"}', cwd=tmp_path)
    assert '"output": "hi\\u0026\\u003c\\u003e"' in result.stdout


def test_no_output_succeeds_quietly(model, tmp_path):
    result = cogserve("predict", model, "-i", "nothing=true", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr.endswith("No output generated\n")
    model_int = write_model(tmp_path / "m", NUMBER_MODEL)
    result = cogserve("predict", model_int, "-i", "none=true", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, ""), result.stderr
    assert result.stderr.endswith("No output generated\n")


def test_none_for_a_declared_float_succeeds_over_http(serve, tmp_path):
    server = serve(write_model(tmp_path / "m", NUMBER_MODEL))
    body = server.predict(none=True).json()
    assert (body["status"], body["output"]) == ("succeeded", None)


@pytest.mark.parametrize("args,message", [
    (["-i", "zz=1"], 'unknown input "zz"; valid inputs are: count, nothing, shape, size, text'),
    (["--json", '{"a": 1, "b": 2}'],
     'unknown inputs "a", "b"; valid inputs are: count, nothing, shape, size, text'),
    (["-i", "count=9"], 'invalid input "count": number must be at most 3'),
    (["-i", "count=0"], 'invalid input "count": number must be at least 1'),
    (["--json", '{"count": "two"}'], 'invalid input "count": expected integer, got string'),
    # `-i` text that is no integer stays a string, as `cog` parses it
    # (script input_validation_before_build)
    (["-i", "count=lots"], 'invalid input "count": expected integer, got string'),
    (["--json", '{"count": 1.5}'], 'invalid input "count": expected integer, got number'),
    (["-i", "size=huge"], 'invalid input "size": must be one of: small, medium, large'),
    (["-i", "text=abcdefg"], 'invalid input "text": maximum string length is 5'),
    (["-i", "text=AB"],
     'invalid input "text": string doesn\'t match the regular expression "^[a-z]+$"'),
    (["--json", '{"count": null}'],
     'invalid input "count": must not be null (omit the input to use its default)'),
])
def test_invalid_inputs_get_cogs_messages_before_setup(model, tmp_path, args, message):
    marker = tmp_path / "setup"
    result = cogserve("predict", model, *args, cwd=tmp_path, env={"SETUP_MARKER": str(marker)})
    assert result.returncode == 2
    assert result.stderr == f"error: {message}\n"
    assert not marker.exists()


def test_a_streaming_model_prints_its_items_as_a_json_array(tmp_path):
    from harness import MODELS

    result = cogserve("predict", MODELS / "stream", "-i", "n=2", "-i", "quiet=true",
                      cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == '[\n  "tok0",\n  "tok1"\n]\n'
