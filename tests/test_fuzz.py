"""Schemathesis against the server's own /openapi.json, for several models (rich inputs,
files and secrets, streaming, trainings), and against the V2 endpoints with the V2
document in tests/v2_openapi.json.

Checks: no 5xx, every status documented, every body valid against the document, the
declared content type; then the server must still be READY with no prediction, process
or temporary file left over. CI runs a small, fixed budget (seed 1); set
COGSERVE_FUZZ_EXAMPLES (e.g. 1000) for a long run.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
from harness import MODELS, Server

HELLO = MODELS.parent.parent / "examples" / "hello-world"
EXAMPLES = int(os.environ.get("COGSERVE_FUZZ_EXAMPLES", "10"))
SEED = os.environ.get("COGSERVE_FUZZ_SEED", "1")
PHASES = os.environ.get("COGSERVE_FUZZ_PHASES", "examples,coverage,fuzzing")
CHECKS = "not_a_server_error,status_code_conformance,response_schema_conformance," \
         "content_type_conformance"
V2_DOC = pathlib.Path(__file__).parent / "v2_openapi.json"


def _schemathesis(schema: str, base_url: str, cwd: pathlib.Path, *extra: str
                  ) -> subprocess.CompletedProcess[str]:
    """The CLI, run in `cwd`: it keeps a cache folder (.schemathesis/) where it runs."""
    command = [sys.executable, "-m", "schemathesis.cli", "run", schema, "--url", base_url,
               "--checks", CHECKS, "--max-examples", str(EXAMPLES), "--seed", SEED,
               "--exclude-path", "/shutdown", "--workers", "1", "--request-timeout", "30",
               "--phases", PHASES, "--no-color", *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=cwd,
                          env={**os.environ, "SCHEMATHESIS_HOOKS": ""})


def _assert_clean(server: Server, result: subprocess.CompletedProcess[str]) -> int:
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    cases = re.search(r"(\d+) generated", result.stdout)
    assert cases is not None and int(cases.group(1)) > 0, result.stdout[-2000:]
    health = server.wait_for("READY", timeout=30)  # alive, and every slot given back
    assert health["status"] == "READY"
    return int(cases.group(1))


MODELS_FUZZED = [str(HELLO), "contract/inputs", "files_in", "stream", "trainings_mixed"]


@pytest.mark.parametrize("model", MODELS_FUZZED, ids=lambda m: pathlib.Path(m).name)
def test_openapi_document_and_behaviour_agree(serve, model, tmp_path):
    # the fuzzer picks inputs' bounds: hello-world's `seconds` (up to 60, for the README's
    # cancel step) would outlast its request timeout; the server's deadline bounds them
    server = serve(model, env={"COGSERVE_DOWNLOAD_TIMEOUT": "2", "COGSERVE_PREDICT_TIMEOUT": "2"})
    result = _schemathesis(server.url + "/openapi.json", server.url, tmp_path)
    _assert_clean(server, result)
    server_tmp = [p for p in server.own_tmp.rglob("*") if p.is_file()]
    assert server_tmp == [], server_tmp  # no temporary file outlived its prediction


def test_v2_endpoints(serve, tmp_path):
    server = serve("v2_scalars")
    doc = json.loads(V2_DOC.read_text())
    name = server.client.get("/v2").json().get("name")
    assert name
    result = _schemathesis(str(V2_DOC), server.url, tmp_path)
    _assert_clean(server, result)
    assert doc["openapi"].startswith("3.")
