"""`cogserve predict` (and its alias `cogserve run`) as a user runs it, like `cog predict`."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading

import pytest
from cli_harness import CONTRACT, EXAMPLES, cogserve


def test_string_output_is_printed_raw(tmp_path):
    result = cogserve("predict", CONTRACT / "out_str", "-i", "text=you", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello you\nsecond line\n"


@pytest.mark.parametrize("command", ["predict", "run"])
def test_inputs_are_coerced_by_the_schema(tmp_path, command):
    (tmp_path / "note.txt").write_text("file text")
    (tmp_path / "in.txt").write_text("uploaded")
    result = cogserve(
        command, CONTRACT / "inputs", "-i", "text=@note.txt", "-i", "text=abc", "-i", "count=5",
        "-i", "ratio=1", "-i", "flag=true", "-i", "words=x", "-i", "words=y", "-i", "numbers=4",
        "-i", "image=@in.txt", "-i", "files=@in.txt", "-i", "files=@in.txt",
        "-i", 'extra={"k": [1]}', "-i", "mixed=2", "-i", "either=q", "-i", "size=3",
        "-i", "mode=slow", "-i", "plain=-4", "-i", "maybe=5", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = {k: (v["type"], v["value"]) for k, v in json.loads(result.stdout).items()}
    assert out["text"] == ("str", "abc")  # the last -i for a scalar wins
    assert out["count"] == ("int", 5)
    assert out["ratio"] == ("float", 1.0)
    assert out["flag"] == ("bool", True)
    assert out["words"] == ("list", ["x", "y"])  # repeated -i builds a list
    assert out["numbers"] == ("list", [4])
    assert out["image"] == ("Path", {"path": True, "content": "uploaded"})
    assert out["files"] == ("list", ["uploaded", "uploaded"])
    assert out["extra"] == ("dict", {"k": [1]})
    assert out["mixed"] == ("int", 2)
    assert out["either"] == ("str", "q")
    assert out["size"] == ("int", 3)
    assert out["mode"] == ("str", "slow")
    assert out["plain"] == ("int", -4)
    assert out["maybe"] == ("str", "5")  # a str input keeps digits as text


def test_at_file_for_a_str_input_reads_the_text(tmp_path):
    (tmp_path / "word.txt").write_text("fromfile")
    result = cogserve("predict", CONTRACT / "out_str", "-i", "text=@word.txt", cwd=tmp_path)
    assert result.stdout == "hello fromfile\nsecond line\n"


def test_json_inputs_and_i_overrides(tmp_path):
    result = cogserve("predict", CONTRACT / "inputs", "--json", '{"text": "abc", "count": 4}',
                      "-i", "count=6", cwd=tmp_path)
    out = json.loads(result.stdout)["output"]  # --json prints the whole prediction
    assert (out["text"]["value"], out["count"]["value"]) == ("abc", 6)


def test_structured_output_is_indented_json(tmp_path):
    result = cogserve("predict", CONTRACT / "out_cog_model", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"label": "cat", "score": 1.0, "tags": ["a", "b"],
                                         "note": None, "file": None}
    assert '\n  "label": "cat",\n' in result.stdout


def test_pydantic_output(tmp_path):
    result = cogserve("predict", CONTRACT / "out_pydantic", "-i", "label=owl", cwd=tmp_path)
    assert json.loads(result.stdout) == {"label": "owl", "count": 3, "note": None}


def test_file_output_is_written_to_output_ext(tmp_path):
    result = cogserve("predict", CONTRACT / "out_path", "-i", "text=x", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "output.txt").read_text() == "file says x"
    assert result.stdout == ""  # as `cog`: the file is the output, stderr says where
    assert "Written output to: output.txt\n" in result.stderr


def test_file_output_goes_to_o(tmp_path):
    result = cogserve("predict", CONTRACT / "out_path", "-o", "result.txt", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "result.txt").read_text() == "file says hi"
    assert not (tmp_path / "output.txt").exists()


def test_list_of_files_are_numbered(tmp_path):
    result = cogserve("predict", CONTRACT / "out_list_path", "-i", "n=3", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [(tmp_path / f"output.{i}.txt").read_text() for i in range(3)] == [
        "part 0", "part 1", "part 2"]


def test_basemodel_with_a_file_field(tmp_path):
    result = cogserve("predict", CONTRACT / "out_cog_model", "-i", "with_file=true",
                      cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    written = [p for p in tmp_path.iterdir() if p.name.startswith("output")]
    assert [p.read_text() for p in written] == ["attached"]
    assert json.loads(result.stdout)["file"] == written[0].name == "output.0.txt"


def test_iterator_output_is_a_json_array_logs_stream_while_it_runs(tmp_path):
    """As `cog`: the items are printed once run() is done, as an indented JSON array; the
    logs reach stderr while it still runs (here: before the gate file exists)."""
    gate = tmp_path / "gate"
    process = subprocess.Popen(
        [sys.executable, "-m", "cogserve.cli", "predict", str(CONTRACT / "out_iterator"),
         "-i", "n=3", "-i", f"gate={gate}"], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in process.stderr], daemon=True).start()
    try:
        while lines.get(timeout=30) != "yielding 0\n":
            pass
        assert process.poll() is None  # still running: the rest waits for the gate
        gate.write_text("go")
        assert process.wait(timeout=30) == 0
        assert process.stdout.read() == "[\n  0,\n  10,\n  20\n]\n"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_concatenate_iterator_prints_each_token_as_a_json_string(tmp_path):
    result = cogserve("predict", CONTRACT / "out_concat", "-i", "prompt=one two", cwd=tmp_path)
    assert result.stdout == '[\n  "one ",\n  "two "\n]\n'


def test_async_iterator(tmp_path):
    result = cogserve("predict", CONTRACT / "out_async_iterator", "-i", "n=2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == '[\n  "tok0",\n  "tok1"\n]\n'
    assert "async setup done" in result.stderr


def test_unknown_input_stops_before_setup(tmp_path):
    marker = tmp_path / "setup-ran"
    result = cogserve("predict", CONTRACT / "setup_marker", "-i", "s=a", "-i", "x=1",
                      cwd=tmp_path, env={"SETUP_MARKER": str(marker)})
    assert result.returncode != 0
    assert result.stderr == 'error: unknown input "x"; valid inputs are: n, s\n'
    assert not marker.exists()


def test_missing_required_input_stops_before_setup(tmp_path):
    marker = tmp_path / "setup-ran"
    result = cogserve("predict", CONTRACT / "setup_marker", cwd=tmp_path,
                      env={"SETUP_MARKER": str(marker)})
    assert result.returncode != 0
    assert result.stderr == 'error: missing required input "s"\n'
    assert not marker.exists()


def test_invalid_values_are_all_reported_before_setup(tmp_path):
    marker = tmp_path / "setup-ran"
    result = cogserve("predict", CONTRACT / "setup_marker", "--json", '{"n": -1, "zz": 0}',
                      cwd=tmp_path, env={"SETUP_MARKER": str(marker)})
    assert result.returncode != 0
    # as `cog`: unknown names first, all of them, with the names it accepts
    assert result.stderr == 'error: unknown input "zz"; valid inputs are: n, s\n'
    result = cogserve("predict", CONTRACT / "setup_marker", "--json", '{"n": -1}',
                      cwd=tmp_path, env={"SETUP_MARKER": str(marker)})
    assert result.stderr == ('error: input validation failed:\n'
                             '- invalid input "n": number must be at least 0\n'
                             '- missing required input "s"\n')
    assert not marker.exists()
    ok = cogserve("predict", CONTRACT / "setup_marker", "-i", "s=ab", "-i", "n=2",
                  cwd=tmp_path, env={"SETUP_MARKER": str(marker)})
    assert ok.stdout == "abab\n" and marker.read_text() == "setup ran"


@pytest.mark.parametrize("args,message", [
    (["-i", "novalue"], "error: Failed to parse input 'novalue', expected format is "
                        "'name=value'"),
    (["-i", "s=@missing.txt"], "error: input \"s\": no such file 'missing.txt'"),
    (["--json", "[1]"], "error: --json must be a JSON object of inputs"),
])
def test_malformed_command_lines(tmp_path, args, message):
    result = cogserve("predict", CONTRACT / "setup_marker", *args, cwd=tmp_path,
                      env={"SETUP_MARKER": str(tmp_path / "m")})
    assert result.returncode == 2
    assert result.stderr.strip() == message


def test_a_file_that_cannot_be_read_as_text_is_named_with_why(tmp_path):
    (tmp_path / "scan.bin").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "folder").mkdir()
    for value, message in (
            ("s=@scan.bin", "error: input \"s\": file 'scan.bin' is not UTF-8 text (only a "
                            "Path or File input takes a binary file)"),
            ("s=@folder", "error: input \"s\": failed to read file 'folder': Is a directory")):
        result = cogserve("predict", CONTRACT / "setup_marker", "-i", value, "-i", "n=1",
                          cwd=tmp_path, env={"SETUP_MARKER": str(tmp_path / "m")})
        assert result.returncode == 2
        assert result.stderr.strip() == message


def test_a_local_file_given_without_its_at_sign_is_pointed_at(tmp_path):
    (tmp_path / "in.txt").write_text("uploaded")
    result = cogserve("predict", CONTRACT / "inputs", "-i", "image=in.txt", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == ("error: input \"image\": 'in.txt' is a file here, not a "
                                     "URL: write -i image=@in.txt to send it")


def test_output_of_the_wrong_type_fails_the_prediction(tmp_path):
    result = cogserve("predict", CONTRACT / "wrong_output", "-i", "kind=x", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip().endswith(
        'error: Prediction failed with status "failed": run() returned a value that does not '
        "match its declared output type Result: output.score: expected float, got str ('high')")
    assert "cogserve/worker" not in result.stderr  # no traceback of our own frames


def test_deprecated_predictor_warns_on_stderr(tmp_path):
    result = cogserve("predict", CONTRACT / "deprecated_predictor", cwd=tmp_path)
    assert result.stdout == "predicted old\n"
    assert ("predict.py:6: DeprecationWarning: BasePredictor and predict() are deprecated; "
            "rename them to BaseRunner and run()") in result.stderr


def test_function_runner_with_predictor_flag(tmp_path):
    result = cogserve("predict", CONTRACT / "function_runner", "-i", "a=40", cwd=tmp_path)
    assert result.stdout == "42\n"
    (tmp_path / "m.py").write_text("def double(x: float) -> float:\n    return x * 2\n")
    result = cogserve("predict", tmp_path, "--predictor", "m.py:double", "-i", "x=1.25")
    assert result.stdout == "2.5\n"


def test_cog_yaml_environment_and_build_keys(tmp_path):
    result = cogserve("predict", CONTRACT / "config_env", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "bonjour|''\n"


def test_setup_weights_gets_cog_weights(tmp_path):
    assert cogserve("predict", CONTRACT / "setup_weights").stdout == "weights=None\n"
    result = cogserve("predict", CONTRACT / "setup_weights", env={"COG_WEIGHTS": "s3://w"})
    assert result.stdout == "weights=s3://w\n"


def test_pgm_invert_example(tmp_path):
    example = EXAMPLES / "pgm-invert"
    result = cogserve("predict", example, "-i", f"image=@{example / 'input.pgm'}",
                      cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert "Written output to: output.pgm\n" in result.stderr
    header = b"P5\n4 2\n255\n"
    assert (example / "input.pgm").read_bytes() == header + bytes([0, 10, 20, 30, 200, 210,
                                                                    250, 255])
    assert (tmp_path / "output.pgm").read_bytes() == header + bytes([255, 245, 235, 225, 55,
                                                                      45, 5, 0])


def test_setup_weights_annotated_path_gets_cog_weights_as_a_string(tmp_path):
    """As coglet: COG_WEIGHTS is handed over as it is (a URL stays a URL the model may
    fetch itself, e.g. with requests.get), whatever setup() annotates; no ./weights."""
    model = CONTRACT / "setup_weights_path"
    (tmp_path / "weights").write_text("a local file the reference ignores")
    assert cogserve("predict", model, cwd=tmp_path).stdout == "no weights\n"
    url = cogserve("predict", model, cwd=tmp_path, env={"COG_WEIGHTS": "https://h/w.tar"})
    assert url.stdout == "str:https://h/w.tar\n", url.stderr


def test_package_module_reference(tmp_path):
    package = tmp_path / "m" / "mypkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text(
        "from cog import BaseRunner\n\n\nclass Runner(BaseRunner):\n"
        "    def run(self, s: str) -> str:\n        return s[::-1]\n")
    (tmp_path / "m" / "cog.yaml").write_text('run: "mypkg.model:Runner"\n')
    result = cogserve("predict", tmp_path / "m", "-i", "s=abc", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "cba\n"), result.stderr


def test_train_command_uses_the_train_entry(tmp_path):
    model = CONTRACT / "train_entry"
    assert cogserve("train", model, "-i", "epochs=3", cwd=tmp_path).returncode == 0
    assert (tmp_path / "weights").read_text() == "trained 3"  # where `cog train` writes it
    bad = cogserve("train", model, "-i", "epochs=0", cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr == 'error: invalid input "epochs": number must be at least 1\n'
    none = cogserve("train", CONTRACT / "out_str", cwd=tmp_path)
    assert none.returncode == 1 and "no `train:` entry names the model" in none.stderr


def test_path_input_with_a_local_default(tmp_path):
    model = CONTRACT / "path_default"
    result = cogserve("predict", model, cwd=tmp_path)
    assert result.stdout == "Path sample shipped with the model | Path sample.txt\n", (
        result.stderr)
    (tmp_path / "other.txt").write_text("uploaded\n")
    result = cogserve("predict", model, "-i", "a=@other.txt", cwd=tmp_path)
    assert result.stdout.startswith("Path uploaded | "), result.stderr
    schema = cogserve("schema", model)
    assert '"default": "sample.txt"' in schema.stdout
