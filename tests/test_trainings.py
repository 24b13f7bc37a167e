"""Trainings (`train:` in cog.yaml) end to end: the prediction endpoints' behaviour for
the train entry point, function or class, sync or async, and `cogserve train`."""

from __future__ import annotations

import threading

import pytest
from cli_harness import cogserve
from harness import MODELS

ASYNC = {"Prefer": "respond-async"}


def test_discovery_and_schema_list_trainings(serve):
    server = serve("trainings_sync")
    root = server.client.get("/").json()
    assert root["trainings_url"] == "/trainings"
    assert root["trainings_idempotent_url"] == "/trainings/{training_id}"
    assert root["trainings_cancel_url"] == "/trainings/{training_id}/cancel"
    schemas = server.client.get("/openapi.json").json()["components"]["schemas"]
    assert list(schemas["TrainingInput"]["properties"]) == ["text", "steps", "sleep"]
    assert schemas["TrainingInput"]["required"] == ["text"]
    assert list(schemas["Input"]["properties"]) == ["text"]


@pytest.mark.parametrize("model,expected,logs", [
    ("trainings_sync", "trained a x2", "step 0\nstep 1\n"),  # sync function
    ("trainings_async", "trained a setups=1", "training a\n"),  # async method, shared class
    ("trainings_mixed", "base trained a", "training a\n"),  # async class beside sync run()
    ("trainings_mixed2", "trained a", "training a\n"),  # sync class beside async run()
])
def test_sync_training_then_prediction(serve, model, expected, logs):
    server = serve(model)
    r = server.client.post("/trainings", json={"input": {"text": "a"}})
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "succeeded", body
    assert body["output"] == expected
    assert body["logs"] == logs
    assert body["input"]["text"] == "a"
    assert body["metrics"]["predict_time"] >= 0
    # run() still answers predictions on the same worker
    r = server.predict(text="b")
    assert r.json()["status"] == "succeeded"


def test_one_class_for_run_and_train_shares_one_instance(serve):
    server = serve("trainings_async")
    assert server.health()["setup"]["logs"] == "model setup\n"  # setup() ran once
    assert server.predict(text="x").json()["output"] == "w0:x:setups=1"
    server.client.post("/trainings", json={"input": {"text": "t1"}})
    assert server.predict(text="x").json()["output"] == "w-t1:x:setups=1"


def test_class_trainer_setup_runs_with_the_predictor_setup(serve):
    server = serve("trainings_mixed")
    assert server.health()["setup"]["logs"] == "runner setup\ntrainer setup\n"


@pytest.mark.parametrize("model", ["trainings_sync", "trainings_async"])
def test_async_training_with_webhook_and_idempotent_put(serve, receiver, model):
    server = serve(model)
    hook = receiver()
    r = server.client.put("/trainings/tr1", headers=ASYNC, json={
        "input": {"text": "w", "sleep": 1}, "webhook": hook.url})
    assert r.status_code == 202
    assert r.json()["id"] == "tr1" and r.json()["status"] == "starting"
    # a retry while it runs creates nothing: 202 with the current state, then a plain
    # PUT waits for the end
    again = server.client.put("/trainings/tr1", headers=ASYNC, json={"input": {"text": "w"}})
    assert again.status_code == 202 and again.json()["id"] == "tr1"
    final = server.client.put("/trainings/tr1", json={"input": {"text": "other"}})
    assert final.status_code == 200
    assert final.json()["status"] == "succeeded" and final.json()["input"]["text"] == "w"
    bodies = hook.wait_for_terminal()
    assert bodies[0]["status"] == "starting" and bodies[-1]["status"] == "succeeded"
    assert bodies[-1]["output"] == final.json()["output"]


@pytest.mark.parametrize("model,inputs", [
    ("trainings_sync", {"steps": 1, "sleep": 60}),
    ("trainings_async", {"sleep": 60}),
    ("trainings_mixed", {"sleep": 60}),
    ("trainings_mixed2", {"busy": 60}),
])
def test_cancel_a_training(serve, receiver, model, inputs):
    server = serve(model)
    [worker] = server.worker_pids()
    hook = receiver()
    r = server.client.post("/trainings", headers=ASYNC, json={
        "id": "tc", "input": {"text": "c", **inputs}, "webhook": hook.url})
    assert r.status_code == 202
    hook.wait_until(lambda bodies: any(b["logs"] for b in bodies))  # train() has begun
    assert server.client.post("/trainings/tc/cancel").status_code == 200
    final = hook.wait_for_terminal()[-1]
    assert final["status"] == "canceled"
    assert "training canceled" in final["logs"]
    assert server.worker_pids() == [worker]  # honoured, not killed
    server.wait_for("READY")
    # a cancel of a finished training is 200 and changes nothing (runtime/store/cache.py)
    assert server.client.post("/trainings/tc/cancel").status_code == 200
    assert server.client.get("/trainings/tc").json()["status"] == "canceled"
    r = server.client.post("/trainings", json={"input": {"text": "next"}})
    assert r.json()["status"] == "succeeded"


def test_sync_training_caller_sees_cancel(serve):
    server = serve("trainings_sync")
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("r", server.client.put(
        "/trainings/ts", json={"input": {"text": "s", "steps": 1, "sleep": 60}})))
    thread.start()
    server.wait_for("BUSY")
    assert server.client.post("/trainings/ts/cancel").status_code == 200
    thread.join(timeout=30)
    assert result["r"].json()["status"] == "canceled"


def test_training_errors(serve):
    server = serve("trainings_sync")
    r = server.client.post("/trainings", json={"input": {"steps": 0}})
    assert r.status_code == 422
    locs = {tuple(d["loc"]) for d in r.json()["detail"]}
    assert ("body", "input", "text") in locs and ("body", "input", "steps") in locs
    r = server.client.post("/trainings", headers={"Accept": "text/event-stream"},
                           json={"input": {"text": "a"}})
    assert r.status_code == 406
    r = server.client.put("/trainings/x", headers={"Accept": "text/event-stream"},
                          json={"input": {"text": "a"}})
    assert r.status_code == 406
    assert server.client.delete("/trainings").status_code == 405
    assert server.client.get("/trainings").json()["next"] is None  # GET lists them
    assert server.client.post("/trainings/nope/cancel").status_code == 404
    assert server.client.post("/trainings", json={"input": {"text": "ok"}}).json()[
        "output"] == "trained ok x2"


def test_no_train_entry_means_no_training_routes(serve):
    server = serve("sleepy")
    assert server.client.post("/trainings", json={"input": {}}).status_code == 404
    assert "trainings_url" not in server.client.get("/").json()


@pytest.mark.parametrize("model,args,expected", [
    ("trainings_sync", ["-i", "text=cli", "-i", "steps=3"], "trained cli x3"),
    ("trainings_async", ["-i", "text=cli"], "trained cli setups=1"),
    ("trainings_mixed", ["--json", '{"text": "cli"}'], "base trained cli"),
])
def test_cogserve_train_cli(model, args, expected, tmp_path):
    proc = cogserve("train", MODELS / model, *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # as `cog train`: the output goes to ./weights, and stderr says so
    assert proc.stdout == ""
    assert (tmp_path / "weights").read_text() == expected
    assert "Written output to: weights\n" in proc.stderr


def test_cogserve_train_cli_bad_input(tmp_path):
    proc = cogserve("train", MODELS / "trainings_sync", "-i", "steps=2", cwd=tmp_path)
    assert proc.returncode == 2
    assert 'missing required input "text"' in proc.stderr


# ---------------------------------------------------------------- train-only models


def test_train_only_model_serves_trainings_and_says_there_is_no_predictor(serve):
    server = serve("trainings_only")  # cog.yaml: only `train:`
    assert server.health()["setup"]["status"] == "succeeded"
    r = server.client.post("/trainings", json={"input": {"text": "a", "steps": 3}})
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "succeeded", body
    assert body["output"] == "trained a x3 from base-weights"  # setup() ran first
    assert body["logs"] == "step 0\nstep 1\nstep 2\n"
    # /predictions: a 404 that says why and what to use, for POST, PUT and cancel
    for method, path in (("POST", "/predictions"), ("PUT", "/predictions/p1"),
                         ("POST", "/predictions/p1/cancel")):
        r = server.client.request(method, path, json={"input": {"text": "a"}})
        assert r.status_code == 404, (method, path)
        assert "no predictor" in r.json()["error"] and "/trainings" in r.json()["error"]
    # V2 runs predictions only: a clear 404, not a 500
    r = server.client.get("/v2/models/trainings_only")
    assert r.status_code == 404
    assert "no predictor" in r.json()["error"]
    # validation, idempotent PUT and cancel work on /trainings as for any model
    r = server.client.post("/trainings", json={"input": {"steps": 0}})
    assert r.status_code == 422
    assert [d["loc"][-1] for d in r.json()["detail"]] == ["steps", "text"]
    r = server.client.put("/trainings/t1", json={"input": {"text": "b"}})
    assert r.json()["output"] == "trained b x2 from base-weights"
    assert server.client.post("/trainings/t1/cancel").status_code == 200  # finished: a no-op


def test_train_only_model_discovery_and_schema(serve):
    server = serve("trainings_only")
    root = server.client.get("/").json()
    assert root["trainings_url"] == "/trainings"
    assert "predictions_url" not in root
    doc = server.client.get("/openapi.json").json()
    assert not [p for p in doc["paths"] if p.startswith("/predictions")]
    assert "/trainings" in doc["paths"] and "/trainings/{training_id}/cancel" in doc["paths"]
    schemas = doc["components"]["schemas"]
    assert "Input" not in schemas and "PredictionRequest" not in schemas
    assert list(schemas["TrainingInput"]["properties"]) == ["text", "steps"]
    assert schemas["TrainingOutput"]["type"] == "string"
    assert "TrainingRequest" in schemas and "HTTPValidationError" in schemas


def test_train_only_model_with_the_cli(tmp_path):
    model = str(MODELS / "trainings_only")
    proc = cogserve("train", model, "-i", "text=cli", "-o", "out.txt", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out.txt").read_text() == "trained cli x2 from base-weights"
    proc = cogserve("predict", model, "-i", "text=cli", cwd=tmp_path)
    assert proc.returncode == 1
    assert "names only `train:`, so use `cogserve train`" in proc.stderr
    proc = cogserve("schema", model, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert '"TrainingInput"' in proc.stdout and '"/predictions"' not in proc.stdout
