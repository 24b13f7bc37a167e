"""The author's API, shown through the real server: outputs, metrics, secrets, async,
iterators, healthcheck, deprecated names, and `import cog` inside cogserve only."""

from __future__ import annotations

import base64
import subprocess
import sys
import threading

import httpx
from cli_harness import CONTRACT, EXAMPLES


def test_cog_alias_inside_the_worker_only(serve, tmp_path):
    """With a (fake) real `cog` installed, the model still gets cogserve's API, a child
    process it starts gets the installed package, and pydantic is never imported."""
    fake = tmp_path / "site" / "cog"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("WHO = 'the installed cog'\n")
    server = serve(CONTRACT / "cog_alias", env={"PYTHONPATH": str(fake.parent)})
    body = server.predict(probe="import cog; print(cog.WHO)").json()
    assert body["status"] == "succeeded", body
    assert body["output"] == {"cog_module": "cogserve.cog", "modules": ["cogserve"],
                              "pydantic_loaded": False, "child": "the installed cog"}


def test_importing_cogserve_does_not_install_the_alias():
    code = "import sys, cogserve; print('cog' in sys.modules, 'pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout == "False False\n"


def test_outputs_become_json(serve):
    server = serve(CONTRACT / "out_cog_model")
    body = server.predict(with_file=True).json()
    assert body["status"] == "succeeded", body
    out = body["output"]
    assert {k: out[k] for k in ("label", "score", "tags", "note")} == {
        "label": "cat", "score": 1.0, "tags": ["a", "b"], "note": None}
    assert out["file"] == "data:text/plain;base64," + base64.b64encode(b"attached").decode()


def test_pydantic_and_path_outputs(serve):
    assert serve(CONTRACT / "out_pydantic").predict().json()["output"] == {
        "label": "dog", "count": 3, "note": None}
    paths = serve(CONTRACT / "out_list_path").predict(n=2).json()["output"]
    assert [base64.b64decode(p.split(",", 1)[1]) for p in paths] == [b"part 0", b"part 1"]


def test_iterator_output_is_a_list_in_the_response_and_logs_are_kept(serve):
    body = serve(CONTRACT / "out_iterator").predict(n=3).json()
    assert body["output"] == [0, 10, 20]
    assert body["logs"] == "yielding 0\nyielding 1\nyielding 2\n"


def test_async_iterator_and_async_setup(serve):
    server = serve(CONTRACT / "out_async_iterator")
    assert "async setup done" in server.health()["setup"]["logs"]
    assert server.predict(n=2).json()["output"] == ["tok0", "tok1"]


def test_streaming_needs_the_decorator(serve):
    server = serve(CONTRACT / "out_iterator")
    r = server.client.post("/predictions", json={"input": {}},
                           headers={"accept": "text/event-stream"})
    assert r.status_code == 406


def test_wrong_output_type_fails_the_prediction_clearly(serve):
    server = serve(CONTRACT / "wrong_output")
    expected = {
        "int": "output: expected Result, got int (5)",
        "missing_field": "output.score: required field is missing",
        "str": "output.score: expected float, got str ('high')",
    }
    for kind, detail in expected.items():
        body = server.predict(kind=kind).json()
        assert body["status"] == "failed"
        message = ("run() returned a value that does not match its declared output type "
                   f"Result: {detail}")
        assert body["error"] == message
        assert body["logs"] == message + "\n"
        assert "output" not in body or body["output"] is None


def test_async_run_with_concurrent_slots(serve):
    server = serve(CONTRACT / "async_run")
    results: list[httpx.Response] = []

    def call(i: int) -> None:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            results.append(client.post("/predictions",
                                       json={"input": {"text": str(i), "delay": 1.0}}))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.status_code for r in results) == [200] * 4  # @concurrent(max=4): no 409
    assert sorted(r.json()["output"] for r in results) == [f"async {i} True" for i in range(4)]


def test_metrics_modes_paths_and_deletion(serve):
    body = serve(CONTRACT / "metrics").predict(case="ok").json()
    metrics = body["metrics"]
    assert metrics.pop("predict_time") > 0
    assert metrics == {"tokens": 15, "steps": ["a", "b"], "timing": {"load": {"disk": 1.5}},
                       "flag": True, "via_scope": {"k": [1, 2]}}


def test_metrics_from_a_thread_the_model_started(serve):
    body = serve(CONTRACT / "metrics").predict(case="thread").json()
    assert body["status"] == "succeeded", body
    assert body["metrics"]["t"] == 1 and body["metrics"]["tokens"] == 10


def test_metric_errors_fail_the_prediction_and_keep_earlier_metrics(serve):
    server = serve(CONTRACT / "metrics")
    expected = {
        "type_change": "Metric 'tokens' has type int, cannot set to str without deleting first",
        "reserved_cog": "the 'cog.' prefix is reserved for system metrics",
        "reserved_time": "'predict_time' is reserved by the runtime",
        "bad_name": "metric name segment '9bad' must start with a letter",
        "too_deep": "metric name must have at most 4 dot-separated segments (got 5)",
        "bad_value": "Unsupported metric value type: object. Expected bool, int, float, str, "
                     "list, or dict.",
        "bad_mode": "Invalid metric mode: 'multiply'. Expected 'replace', 'incr', or 'append'.",
        "path_conflict": "Metric 'tokens' has type int, cannot set 'tokens.inner' inside it "
                         "without deleting first",
    }
    for case, message in expected.items():
        body = server.predict(case=case).json()
        assert body["status"] == "failed", case
        kind = "TypeError" if message.startswith(("Unsupported", "Invalid", "Metric")) \
            else "ValueError"
        assert body["error"] == f"Prediction failed: Prediction failed: {kind}: {message}"
        assert body["metrics"]["tokens"] == 10  # recorded before the error
        assert "record_metric" in body["logs"]  # the author's line is in the traceback


def test_secret_is_redacted_in_logs_and_echoed_input(serve):
    body = serve(CONTRACT / "secrets").predict(token="hunter2").json()
    assert body["output"] == "length 7 n"
    assert body["logs"] == "token is ********** / Secret(**********)\n"  # Cog's repr
    assert body["input"]["token"] == "**********"
    assert "hunter2" not in str(body)


def test_deprecated_predictor_logs_a_warning_and_runs(serve):
    server = serve(CONTRACT / "deprecated_predictor")
    assert ("predict.py:6: DeprecationWarning: BasePredictor and predict() are deprecated"
            in server.health()["setup"]["logs"])
    assert server.predict(text="x").json()["output"] == "predicted x"


def test_function_runner_and_setup_weights(serve):
    assert serve(CONTRACT / "function_runner").predict(a=1).json()["output"] == 3
    server = serve(CONTRACT / "setup_weights", env={"COG_WEIGHTS": "https://w/x.tar"})
    assert server.predict().json()["output"] == "weights=https://w/x.tar"


def test_healthcheck_drives_unhealthy(serve, tmp_path):
    flag = tmp_path / "unhealthy.flag"
    server = serve(CONTRACT / "healthcheck", env={"HEALTH_FLAG": str(flag)})
    assert server.health()["status"] == "READY"
    flag.write_text("x")
    health = server.wait_for("UNHEALTHY")
    assert "returned False" in health["user_healthcheck_error"]
    flag.unlink()
    assert server.wait_for("READY")["status"] == "READY"


def test_pgm_invert_example_over_http(serve):
    example = EXAMPLES / "pgm-invert"
    server = serve(example)
    image = base64.b64encode((example / "input.pgm").read_bytes()).decode()
    body = server.predict(image=f"data:image/x-portable-graymap;base64,{image}").json()
    assert body["status"] == "succeeded", body
    assert base64.b64decode(body["output"].split(",", 1)[1]).endswith(
        bytes([255, 245, 235, 225, 55, 45, 5, 0]))


def test_file_handle_output_and_a_wrong_iterator_item(serve):
    body = serve(CONTRACT / "out_file").predict(text="xyz").json()
    assert body["status"] == "succeeded", body
    assert body["output"] == "data:text/plain;base64," + base64.b64encode(b"xyz").decode()
    body = serve(CONTRACT / "out_iterator_wrong").predict().json()
    assert body["status"] == "failed"
    assert body["error"] == ("run() returned a value that does not match its declared output "
                             "type int: output: expected int, got str ('three')")
    assert body["output"] is None  # a failure reports no output, as the reference


def _post_in_thread(server, body: dict, results: list) -> threading.Thread:
    def call() -> None:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            results.append(client.post("/predictions", json=body))

    thread = threading.Thread(target=call)
    thread.start()
    return thread


def test_cog_yaml_concurrency_sets_the_slots(serve, tmp_path):
    gate = tmp_path / "gate"
    server = serve(CONTRACT / "concurrency_yaml")
    results: list[httpx.Response] = []
    threads = [_post_in_thread(server, {"input": {"gate": str(gate)}}, results)
               for _ in range(2)]
    server.wait_for("BUSY")  # two slots taken
    extra = server.predict(gate=str(gate))
    assert extra.status_code == 409
    gate.write_text("open")
    for t in threads:
        t.join()
    assert [r.json()["output"] for r in results] == ["done", "done"]
    assert server.wait_for("READY")["status"] == "READY"
    env_server = serve(CONTRACT / "concurrency_yaml", env={"COG_MAX_CONCURRENCY": "1"})
    gate.unlink()
    threads = [_post_in_thread(env_server, {"input": {"gate": str(gate)}}, results)]
    env_server.wait_for("BUSY")  # COG_MAX_CONCURRENCY=1 overrides cog.yaml: one slot
    assert env_server.predict(gate=str(gate)).status_code == 409
    gate.write_text("open")
    threads[0].join()
