"""Behaviours of a Cog model under cogserve that no other module pins, each as Cog 0.23
(coglet) shows it: one shared server for `models/everyday`, whose `action` input picks
the behaviour, and the CLI where Cog's own check is `cog predict`.

The facts come from Cog's source and integration tests (what the reference answers);
tests/README.md maps every behaviour area to the module that pins it.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator

import httpx
import pytest
from cli_harness import CONTRACT, cogserve
from filehub import Receiver as UploadReceiver
from harness import MODELS, Server
from receiver import Receiver

EVERYDAY = MODELS / "everyday"


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with Server(EVERYDAY, env={"COGSERVE_HEALTHCHECK_TIMEOUT": "1"}) as running:
        yield running


def run(server: Server, **inputs: object) -> dict:
    response = server.predict(**inputs)
    assert response.status_code == 200, response.text
    return response.json()


def data_url(text: str) -> str:
    return "data:text/plain;base64," + base64.b64encode(text.encode()).decode()


def test_a_url_given_to_a_str_input_stays_a_string(server: Server, tmp_path) -> None:
    url = "https://api.example.com/v1/resource"
    assert run(server, text=url)["output"] == f"type=str value={url}"
    # the CLI does not fetch it either
    result = cogserve("predict", EVERYDAY, "-i", f"text={url}", cwd=tmp_path)
    assert result.stdout == f"type=str value={url}\n", result.stderr


def test_optional_files_and_paths_are_none_when_left_out(server: Server, tmp_path) -> None:
    assert run(server, action="paths")["output"] == "type=NoneType"
    assert run(server, action="doc")["output"] == "type=NoneType"
    body = run(server, action="paths", paths=[data_url("one"), data_url("two")])
    assert body["output"] == "count=2 content=one,two"
    assert run(server, action="doc", doc=data_url("abc"))["output"] == "read=abc"
    # `-i paths=@a -i paths=@b` makes a list, as cog predict does
    (tmp_path / "a.txt").write_text("one")
    (tmp_path / "b.txt").write_text("two")
    result = cogserve("predict", EVERYDAY, "-i", "action=paths", "-i", "paths=@a.txt",
                      "-i", "paths=@b.txt", cwd=tmp_path)
    assert result.stdout == "count=2 content=one,two\n", result.stderr
    result = cogserve("predict", EVERYDAY, "-i", "action=paths", cwd=tmp_path)
    assert result.stdout == "type=NoneType\n", result.stderr


def test_a_union_of_list_types_takes_either_list(server: Server) -> None:
    assert run(server, action="nums", nums=[1])["output"] == "int:1"
    assert run(server, action="nums", nums=[1.5])["output"] == "float:1.5"
    assert run(server, action="nums", nums=[])["output"] == "empty"
    for wrong in (["3"], [True], 1):  # a string, a boolean and a bare number are refused
        response = server.predict(action="nums", nums=wrong)
        assert response.status_code == 422, (wrong, response.text)
        assert response.json()["detail"][0]["loc"][:2] == ["body", "input"], response.text


def test_the_instance_keeps_its_state_between_predictions(server: Server) -> None:
    first = run(server, action="remember", text="a")["output"]
    second = run(server, action="remember", text="b")["output"]
    # other tests of the module may have added their own items first (random order)
    assert first.endswith("'a']") and second.endswith("'a', 'b']")
    assert second.startswith(first[:-1])


def test_a_process_started_in_setup_answers_during_predictions(server: Server) -> None:
    body = run(server, action="ping", text="p1")
    assert (body["status"], body["output"]) == ("succeeded", "pong to p1")
    assert "sending ping to the helper" in body["logs"]
    assert "received 'pong to p1' from the helper" in body["logs"]


def test_sys_exit_fails_the_prediction_and_the_worker_serves_on(server: Server) -> None:
    pids = server.worker_pids()
    body = run(server, action="exit")
    assert body["status"] == "failed"
    assert "SystemExit" in body["error"], body
    after = run(server, text="still alive")
    assert (after["status"], after["output"]) == ("succeeded", "type=str value=still alive")
    assert server.worker_pids() == pids  # the same worker, not a restarted one


def test_health_is_busy_during_a_prediction_and_ready_right_after(server: Server) -> None:
    """One slot: BUSY while it is taken (as the reference, test_reference_diff.py), READY
    right after each prediction and under a supervisor's repeated polling."""
    results: list[httpx.Response] = []
    slow = threading.Thread(target=lambda: results.append(
        server.predict(action="sleep", seconds=1.0)))
    slow.start()
    try:
        health = server.wait_for("BUSY", timeout=10)
        assert "user_healthcheck_error" not in health
    finally:
        slow.join(timeout=30)
    assert results[0].json()["output"] == "slept 1.0"
    for k in range(3):
        assert run(server, text=str(k))["status"] == "succeeded"
        assert server.health()["status"] == "READY"
    for _ in range(50):
        health = server.health()
        assert health["status"] == "READY" and "user_healthcheck_error" not in health


def test_an_async_healthcheck_drives_unhealthy_and_back(server: Server) -> None:
    """The reference's texts for an async healthcheck: False, an exception, a timeout."""
    expected = {
        "false": "Healthcheck failed: user-defined healthcheck returned False",
        "raise": "Healthcheck failed: RuntimeError: the async probe broke",
        "hang": "Healthcheck failed: user-defined healthcheck timed out after 1.0 seconds",
    }
    try:
        for mode, error in expected.items():
            assert run(server, action="health", text=mode)["output"] == f"health={mode}"
            health = server.health()
            assert (health["status"], health.get("user_healthcheck_error")) == (
                "UNHEALTHY", error)
    finally:
        run(server, action="health", text="ok")
    assert server.health()["status"] == "READY"


def test_completed_webhooks_of_a_failing_iterator_and_of_recorded_metrics() -> None:
    """Only "completed" is sent: a failed iterator's error and no output (as the
    reference), and the model's own metrics beside predict_time."""
    receiver = Receiver()
    try:
        with Server(MODELS / "stream") as streaming:
            for id_, inputs in (("breaks-midway", {"n": 4, "fail_at": 2, "quiet": True}),
                                ("counts", {"n": 3, "metric": True, "quiet": True})):
                response = streaming.client.post(
                    "/predictions", headers={"prefer": "respond-async"},
                    json={"id": id_, "input": inputs, "webhook": receiver.url,
                          "webhook_events_filter": ["completed"]})
                assert response.status_code == 202, response.text
                receiver.wait_until(lambda bodies, id_=id_: any(b["id"] == id_
                                                                 for b in bodies))
            delivered = receiver.wait_for_terminal()
    finally:
        receiver.close()
    assert [b["id"] for b in delivered] == ["breaks-midway", "counts"]  # one each
    failed, counted = delivered
    assert failed["status"] == "failed"
    assert failed["error"] == ("Prediction failed: Generator iteration error: RuntimeError: "
                               "stream broke")
    assert failed["output"] is None
    assert counted["status"] == "succeeded"
    assert counted["output"] == ["tok0", "tok1", "tok2"]
    assert counted["metrics"]["tokens"] == 3 and counted["metrics"]["predict_time"] > 0


def test_a_runner_in_a_subfolder_imports_modules_of_the_model_root(tmp_path) -> None:
    result = cogserve("predict", MODELS / "subdir_runner", "-i", "s=world", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "hello world\n"), result.stderr


def test_an_output_type_from_another_module_of_the_model(tmp_path) -> None:
    model = MODELS / "split_types"
    schema = json.loads(cogserve("schema", model).stdout)
    components = schema["components"]["schemas"]
    assert components["Input"]["required"] == ["prompt"]
    output = components["Output"]
    assert output["type"] == "object"
    assert set(output["properties"]) == {"text", "score", "tags"}
    result = cogserve("predict", model, "-i", "prompt=a-b", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"text": "a-b", "score": 1.0, "tags": ["a", "b"]}


def test_a_list_of_one_uploaded_path_is_still_a_list() -> None:
    uploads = UploadReceiver()
    try:
        with Server(CONTRACT / "out_list_path", "--upload-url",
                    f"{uploads.url}/bucket") as listing:
            one = run(listing, n=1)["output"]
            assert one == [f"{uploads.url}/stored/part0.txt"]
            two = run(listing, n=2)["output"]
            assert two == [f"{uploads.url}/stored/part{i}.txt" for i in range(2)]
        assert [u.head for u in uploads.uploads] == [b"part 0", b"part 0", b"part 1"]
    finally:
        uploads.close()
