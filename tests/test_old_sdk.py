"""Models written for older Cog SDKs (0.8 to 0.16, the pydantic-based SDK) load and run,
each old name logging one deprecation line; one that cannot be served says why.

Cog 0.23.1 refuses these models at import (`No module named 'cog.base_predictor'`,
`cannot import name 'Weights' from 'cog.types'`): there is no reference answer to match,
only the older SDK's behaviour (pydantic's BaseModel rules, `Input(...)` required).
"""

from __future__ import annotations

import base64

import pytest
from cli_harness import cogserve
from harness import MODELS, Server, write_model

OLD_NAMES = ("cog.types.Weights", "cog.types.Input", "cog.base_predictor",
             "cog.server.scope", "cog.server.exceptions")


@pytest.fixture(scope="module")
def server():
    with Server(MODELS / "old_sdk", env={"COG_WEIGHTS": "https://example.com/w.tar"}) as running:
        yield running


def test_each_old_name_logs_one_line_naming_its_replacement(server):
    logs = server.health()["setup"]["logs"]
    for old in OLD_NAMES:
        lines = [line for line in logs.splitlines() if line.startswith(f"cog: {old} ")]
        assert len(lines) == 1, (old, logs)
        assert "is deprecated (an older Cog SDK's name, removed in Cog 0.17): use " in lines[0]
    assert "cog: cog.types.Weights is deprecated (an older Cog SDK's name, removed in Cog " \
           "0.17): use `Path | str` (setup(weights) gets COG_WEIGHTS as a str)" in logs
    assert "cog: Output(note, score, words, weights) follows pydantic's BaseModel rules" in logs


def test_the_old_model_runs_with_pydantic_semantics(server):
    body = server.predict(text="two words").json()
    assert body["status"] == "succeeded", body
    assert body["output"] == {"text": "two words", "note": None, "score": 0.5, "words": 2,
                              "weights": "https://example.com/w.tar"}
    assert body["metrics"]["old_metric"] == 1 and body["metrics"]["new_metric"] == 2
    assert "deprecated" not in body["logs"]  # warned once, at load


def test_input_ellipsis_is_required_and_file_inputs_work(server):
    r = server.predict()
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "input", "text"]
    url = "data:text/plain;base64," + base64.b64encode(b" and more").decode()
    assert server.predict(text="a", handle=url).json()["output"]["text"] == "a and more"
    schema = server.client.get("/openapi.json").json()["components"]["schemas"]
    assert schema["Output"]["required"] == ["text", "words"]  # the others have defaults


@pytest.mark.parametrize("line,name", [
    ("from cog.json import make_encodeable", "cog.json"),
    ("from cog.types import CogConfig", "cog.types.CogConfig"),
])
def test_a_name_no_sdk_cogserve_follows_has_is_explained(serve, tmp_path, line, name):
    folder = write_model(tmp_path, f"from cog import BasePredictor\n{line}\n\n\n"
                         "class Predictor(BasePredictor):\n"
                         "    def predict(self) -> str:\n        return ''\n",
                         'predict: "predict.py:Predictor"\n', name="predict.py")
    health = serve(folder, wait="SETUP_FAILED").health()
    assert health["status"] == "SETUP_FAILED"
    assert "predict.py:2: importing predict.py failed" in health["setup"]["logs"]
    assert (f"{name} is not part of Cog 0.23.1's SDK, which cogserve serves (with the older "
            "SDKs' names its README lists): the model was written for another Cog release"
            in health["setup"]["logs"])
    result = cogserve("predict", folder, cwd=tmp_path)
    assert result.returncode == 1 and f"{name} is not part of Cog 0.23.1's SDK" in result.stderr
