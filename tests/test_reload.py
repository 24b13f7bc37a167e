"""`cogserve serve --reload`: an edited predict.py is picked up, in-flight predictions
finish on the old code, an import error shows in /health-check until the next fix."""

from __future__ import annotations

import os
import threading
import time

import httpx
from harness import write_model

SOURCE = '''
import os
import time

from cog import BasePredictor


class Predictor(BasePredictor):
    def setup(self) -> None:
        print("setup VERSION")

    def predict(self, gate: str = "") -> str:
        limit = time.monotonic() + 60
        while gate and not os.path.exists(gate) and time.monotonic() < limit:
            time.sleep(0.005)
        return "VERSION"
'''


def _source(version: str) -> str:
    return SOURCE.replace("VERSION", version)


def _serves(server, version: str) -> None:
    """Wait until predictions answer `version` (the reload is asynchronous)."""
    limit = time.monotonic() + 30
    last = None
    while time.monotonic() < limit:
        if server.health()["status"] == "READY":
            last = server.predict().json()
            if last.get("output") == version:
                return
        time.sleep(0.05)
    raise AssertionError(f"never served {version}; last {last}; health {server.health()}")


def test_reload_picks_up_an_edited_predict_py(serve, tmp_path):
    model = write_model(tmp_path / "model", _source("v1"),
                        cog_yaml='predict: "predict.py:Predictor"\n', name="predict.py")
    server = serve(model, "--reload")
    assert server.predict().json()["output"] == "v1"

    # a prediction in flight when the file changes finishes on the old code first
    gate = tmp_path / "gate"
    result: dict[str, httpx.Response] = {}
    thread = threading.Thread(target=lambda: result.setdefault(
        "r", server.client.post("/predictions", json={"input": {"gate": str(gate)}})))
    thread.start()
    limit = time.monotonic() + 30
    while server.health()["status"] != "BUSY":
        assert time.monotonic() < limit
        time.sleep(0.01)
    (model / "predict.py").write_text(_source("v2"))
    (model / "notes.txt").write_text("not code: ignored")
    while "--reload: predict.py changed" not in server.output():  # the watcher saw it
        assert time.monotonic() < limit
        time.sleep(0.01)
    assert server.health()["status"] == "BUSY"  # still running the old prediction
    gate.touch()
    thread.join(timeout=30)
    assert result["r"].json()["status"] == "succeeded"
    assert result["r"].json()["output"] == "v1"
    _serves(server, "v2")
    assert "setup v2" in server.health()["setup"]["logs"]

    # a model that no longer imports: the error shows, the server waits for a fix
    (model / "predict.py").write_text("import no_such_module_here\n" + _source("v3"))
    doc = server.wait_for("SETUP_FAILED")
    assert "no_such_module_here" in doc["setup"]["logs"]
    assert server.client.post("/predictions", json={"input": {}}).status_code == 503
    (model / "predict.py").write_text(_source("v4"))
    _serves(server, "v4")


def test_reload_ignores_a_stale_bytecode_cache(serve, tmp_path):
    """An edit that keeps predict.py's size and lands in the same second as the last one
    leaves __pycache__/predict.*.pyc looking current (Python checks whole-second mtime and
    size): the reloader drops the cache of every changed file so the new code runs."""
    model = write_model(tmp_path / "model", _source("v1"),
                        cog_yaml='predict: "predict.py:Predictor"\n', name="predict.py")
    source = model / "predict.py"
    # "" counts as unset: the worker writes bytecode as it does on a user's machine
    server = serve(model, "--reload", env={"PYTHONDONTWRITEBYTECODE": ""})
    assert server.predict().json()["output"] == "v1"
    assert list((model / "__pycache__").glob("predict.*.pyc")), "the worker wrote no .pyc"

    stat = source.stat()
    source.write_text(_source("v2"))  # same size as v1's source
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same second as v1's
    _serves(server, "v2")
