"""Published Cog models, run unmodified with `cogserve predict` / `train`, checked as Cog
checks them.

The folders under tests/corpus/models are copied unchanged from replicate/cog (Apache-2.0,
see tests/corpus/README.md for the commit and each one's path; `scripts/vendor-corpus`
copies them again). The cases are Cog's own: its test harness's `manifest.yaml`
(tools/test-harness, vendored as tests/corpus/manifest.yaml) names each model's inputs
and what its output must be, and `cog predict` is run in the model's folder with `-i`
per input, the output read from stdout or from `Written output to: PATH`. This test does
the same with cogserve, in a copy of the folder. Two fixtures that Cog's manifest only
builds get a prediction of ours (`EXTRA`), marked as such.

Models that declare packages get an environment from PyPI (uv's cache makes a rerun
fast); the others run in cogserve's own Python, which has what a Cog image has.
"""

from __future__ import annotations

import json
import mimetypes
import pathlib
import shutil
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from cli_harness import cogserve

CORPUS = pathlib.Path(__file__).parent / "corpus"
MANIFEST = yaml.safe_load((CORPUS / "manifest.yaml").read_text())

# Entries of Cog's manifest that are not in the corpus, and why.
NOT_VENDORED = {
    "notebook": "installs jupyterlab 3.2.4 (about 100 packages): not a small dependency",
    "managed-weights": "needs a managed-weights mount (Cog's harness requires "
                       "COG_MANAGED_WEIGHTS_READY)",
    "streaming-text": "torch and transformers, and downloads a model",
    "resnet": "GPU (torch)",
    "z-image-turbo": "GPU (diffusers), downloads a model",
}

# Ours, for fixtures Cog's manifest builds without predicting (file inputs as @fixtures).
EXTRA = {
    "fixture-list-types": [{
        "description": "lists of strings, integers, paths and files (ours)",
        "inputs": {"tags": ["a", "b"], "numbers": [1, 2, 3], "paths": ["@test_image.png"],
                   "files": ["@hotdog.png", "@test_image.png"]},
        "expect": {"type": "exact", "value": "tags=2 numbers=3"}}],
    "fixture-file-path-types": [{
        "description": "a path and a file, optional ones left out (ours)",
        "inputs": {"image": "@test_image.png", "document": "@hotdog.png"},
        "expect": {"type": "regex", "pattern": r"^image=/\S+\.png mask=None$"}}],
}


@dataclass(frozen=True)
class Case:
    model: str
    folder: pathlib.Path
    command: str  # predict | train
    spec: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{self.model}:{self.command}:{self.spec.get('description', '')}"


def _folder(entry: dict[str, Any]) -> pathlib.Path:
    prefix = "fixture-" if "fixtures" in entry.get("base_dir", "") else ""
    return CORPUS / "models" / f"{prefix}{entry['path']}"


def _cases() -> list[Case]:
    cases = []
    for entry in MANIFEST["models"]:
        if entry["name"] in NOT_VENDORED:
            continue
        folder = _folder(entry)
        for command, key in (("train", "train_tests"), ("predict", "tests")):
            specs = entry.get(key) or (EXTRA.get(entry["name"], []) if command == "predict"
                                       else [])
            cases += [Case(entry["name"], folder, command, spec) for spec in specs]
    return cases


CASES = _cases()


def test_every_model_of_cogs_manifest_is_in_the_corpus_or_said_why_not() -> None:
    names = {entry["name"] for entry in MANIFEST["models"]}
    vendored = {p.name for p in (CORPUS / "models").iterdir()}
    for entry in MANIFEST["models"]:
        assert entry["name"] in NOT_VENDORED or _folder(entry).name in vendored, entry["name"]
    assert set(NOT_VENDORED) <= names
    assert len(vendored) >= 10 and len({c.model for c in CASES}) == len(vendored)


def _arguments(key: str, value: Any) -> list[str]:
    """A manifest value as `cog` takes it: "@name" is a fixture file, a list is one `-i`
    per item (as Cog's scripts pass lists: `-i files=@a.txt -i files=@b.txt`)."""
    if isinstance(value, list):
        return [arg for item in value for arg in _arguments(key, item)]
    text = json.dumps(value) if isinstance(value, bool) else str(value)  # Go's fmt: true
    if text.startswith("@"):
        text = f"@{CORPUS / 'fixtures' / text[1:]}"
    return ["-i", f"{key}={text}"]


def _output(stdout: str, stderr: str, folder: pathlib.Path) -> str:
    """What Cog's harness validates: the file named on stderr, else stdout."""
    for line in stderr.splitlines():
        if "Written output to:" in line:
            path = line.split("Written output to:", 1)[1].strip()
            return str(folder / path)
    return stdout.strip()


def _subset(want: Any, got: Any) -> bool:
    if isinstance(want, dict) and isinstance(got, dict):
        return all(k in got and _subset(v, got[k]) for k, v in want.items())
    return bool(want == got)


def _check(output: str, expect: dict[str, Any]) -> None:
    import re

    kind = expect["type"]
    if kind == "exact":
        assert output == expect["value"]
    elif kind == "contains":
        assert expect["value"] in output
    elif kind == "regex":
        assert re.search(expect["pattern"], output), output
    elif kind == "file_exists":
        assert pathlib.Path(output).is_file(), output
        if "mime" in expect:
            assert mimetypes.guess_type(output)[0] == expect["mime"]
    elif kind == "json_match":
        assert _subset(expect["match"], json.loads(output)), output
    elif kind == "json_keys":
        assert json.loads(output)
    elif kind == "not_empty":
        assert output.strip()
    else:
        raise AssertionError(f"unknown expectation {kind!r}")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_published_model(case: Case, tmp_path: pathlib.Path) -> None:
    folder = tmp_path / case.folder.name
    shutil.copytree(case.folder, folder)
    args = []
    for key in sorted(case.spec.get("inputs") or {}):
        args += _arguments(key, case.spec["inputs"][key])
    result = cogserve(case.command, *args, cwd=folder, timeout=300)
    assert result.returncode == 0, result.stderr
    _check(_output(result.stdout, result.stderr, folder), case.spec["expect"])
