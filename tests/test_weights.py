"""cog.yaml `weights:` (Cog's managed weights): local sources appear at their target before
the worker starts; sources this machine cannot fetch, and targets that are not ours, are
refused with the reason."""

from __future__ import annotations

import json
import os
import pathlib

from cli_harness import cogserve
from harness import Server, write_model

LISTING = """\
import json
import os

from cog import BaseRunner

TARGET = os.environ["WEIGHTS_TARGET"]


class Runner(BaseRunner):
    def setup(self) -> None:
        self.found = {}
        for folder, _, names in os.walk(TARGET, followlinks=True):
            for name in names:
                path = os.path.join(folder, name)
                with open(path) as f:
                    self.found[os.path.relpath(path, TARGET)] = f.read()

    def run(self) -> str:
        return json.dumps(self.found, sort_keys=True)
"""


def _model(tmp: pathlib.Path, target: pathlib.Path, source: str = "weights",
           extra: str = "") -> pathlib.Path:
    model = write_model(tmp / "model", LISTING, (
        'run: "run.py:Runner"\n'
        f"environment:\n  - WEIGHTS_TARGET={target}\n"
        "weights:\n"
        "  - name: base\n"
        f"    target: {target}\n"
        f"    source:\n      uri: {source}\n"
        '      include: ["*.safetensors", "*.json"]\n'
        '      exclude: ["onnx/", "skip.json"]\n' + extra))
    files = {"model.safetensors": "tensors", "config.json": "{}", "skip.json": "no",
             "README.md": "no", "sub/more.safetensors": "deep", "onnx/model.json": "no"}
    for name, text in files.items():
        (model / "weights" / name).parent.mkdir(parents=True, exist_ok=True)
        (model / "weights" / name).write_text(text)
    return model


def test_a_local_source_is_found_at_its_target_filtered_and_reused(tmp_path) -> None:
    target = tmp_path / "mnt" / "weights" / "base"
    model = _model(tmp_path, target)
    result = cogserve("predict", model)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"config.json": "{}", "model.safetensors": "tensors",
                                         "sub/more.safetensors": "deep"}
    link = os.readlink(target)
    again = cogserve("predict", model)  # the same view: the link is kept
    assert again.returncode == 0, again.stderr
    assert os.readlink(target) == link
    (model / "weights" / "extra.json").write_text("new")  # another listing, a new view
    third = cogserve("predict", model)
    assert json.loads(third.stdout)["extra.json"] == "new"
    assert os.readlink(target) != link


def test_serve_mounts_them_before_setup(tmp_path) -> None:
    target = tmp_path / "served" / "base"
    with Server(_model(tmp_path, target, source="file://./weights")) as server:
        response = server.predict()
        assert response.status_code == 200, response.text
        assert "model.safetensors" in json.loads(response.json()["output"])
        assert "weights 'base': 3 files at" in server.output()


def test_a_source_this_machine_cannot_fetch_is_refused_naming_it(tmp_path) -> None:
    model = _model(tmp_path, tmp_path / "t", extra=(
        "  - name: minilm\n    target: /nonexistent-cogserve-test/minilm\n"
        "    source:\n      uri: hf://sentence-transformers/all-MiniLM-L6-v2\n"))
    result = cogserve("predict", model)
    assert result.returncode == 1
    assert ("weights 'minilm': source 'hf://sentence-transformers/all-MiniLM-L6-v2' cannot "
            "be fetched by cogserve") in result.stderr
    assert "set source.uri to that folder" in result.stderr
    with Server(model, wait=None) as server:  # serve refuses at start, the same words
        assert server.process.wait(timeout=30) == 1
        assert "cannot be fetched by cogserve" in server.output()


def test_a_target_that_is_not_ours_is_left_alone(tmp_path) -> None:
    target = tmp_path / "taken"
    target.mkdir()
    (target / "precious.bin").write_text("keep")
    result = cogserve("predict", _model(tmp_path, target))
    assert result.returncode == 1
    assert f"target {target} already exists and is not cogserve's link" in result.stderr
    assert (target / "precious.bin").read_text() == "keep"


def test_entries_are_checked_as_cog_checks_them(tmp_path) -> None:
    model = _model(tmp_path, tmp_path / "a", extra=(
        f"  - name: Bad_Name\n    target: {tmp_path / 'b'}\n    source: {{uri: weights}}\n"))
    result = cogserve("predict", model)
    assert result.returncode == 1
    assert "weights[1].name 'Bad_Name' must contain only lowercase" in result.stderr
    overlap = _model(tmp_path / "o", tmp_path / "a", extra=(
        f"  - name: inner\n    target: {tmp_path / 'a' / 'x'}\n    source: {{uri: weights}}\n"))
    result = cogserve("predict", overlap)
    assert "weights[1].target" in result.stderr and "must be disjoint" in result.stderr
