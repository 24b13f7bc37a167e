"""Recently finished predictions (an addition to Cog's API): GET /predictions/{id}, a
retried PUT answered from the store without running the model, cancel of a finished id,
eviction by count and by bytes (cogserve/runtime/store/cache.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from harness import Server
from test_sse import read_all

ASYNC = {"Prefer": "respond-async"}
SSE = {"Accept": "text/event-stream"}


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    # three entries within 6,000 bytes: the tests below create what they check against
    with Server("counter", env={"COGSERVE_RECENT_PREDICTIONS": "3",
                                "COGSERVE_RECENT_PREDICTIONS_BYTES": "6000"}) as running:
        yield running


def runs(server: Server) -> int:
    """How many times the model ran so far (it returns its run count)."""
    body = server.predict(text="count").json()
    return int(body["output"].split(":")[0])


def poll(server: Server, path: str, status: str) -> dict:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        body = server.client.get(path).json()
        if body.get("status") == status:
            return body
        time.sleep(0.02)
    raise AssertionError(f"{path} never reached {status}: {body}")


def test_a_retried_put_answers_from_the_store_without_running_the_model(server):
    before = runs(server)
    first = server.client.put("/predictions/again-1", json={"input": {"text": "a"}})
    assert first.status_code == 200
    assert first.json()["output"] == f"{before + 1}:a"
    retry = server.client.put("/predictions/again-1", json={"input": {"text": "a"}})
    assert retry.status_code == 200
    assert retry.json() == first.json()  # the stored final object, timestamps and all
    retry_async = server.client.put("/predictions/again-1", json={"input": {"text": "a"}},
                                    headers=ASYNC)
    assert retry_async.status_code == 202
    assert retry_async.json() == first.json()
    assert server.client.get("/predictions/again-1").json() == first.json()
    # the model ran once for again-1 (and once for each count)
    assert runs(server) == before + 2


def test_get_follows_a_running_prediction_to_its_end(server, tmp_path):
    gate = tmp_path / "go"
    r = server.client.put("/predictions/poll-1", json={"input": {"text": "p", "gate": str(gate)}},
                          headers=ASYNC)
    assert r.status_code == 202
    running = server.client.get("/predictions/poll-1")
    assert running.status_code == 200
    assert running.json()["status"] in ("starting", "processing")
    assert running.json()["output"] is None
    gate.touch()
    done = poll(server, "/predictions/poll-1", "succeeded")
    assert done["output"].endswith(":p")
    assert done["logs"].startswith("run ")
    assert server.client.head("/predictions/poll-1").status_code == 200


def test_cancel_of_a_finished_id_is_200_and_changes_nothing(server):
    first = server.client.put("/predictions/done-1", json={"input": {"text": "c"}}).json()
    for _ in range(2):
        r = server.client.post("/predictions/done-1/cancel")
        assert r.status_code == 200
        assert r.json() == first  # the answer says how it ended: the cancel came too late
    assert server.client.get("/predictions/done-1").json() == first
    assert first["status"] == "succeeded"


def test_unknown_ids_are_404(server):
    r = server.client.get("/predictions/never-made")
    assert r.status_code == 404
    assert r.json()["error"] == ("No prediction with id 'never-made' is running or recently "
                                 "finished")
    assert server.client.post("/predictions/never-made/cancel").status_code == 404
    assert server.client.delete("/predictions/never-made").status_code == 405


def test_evicted_by_count_is_404_saying_so(server):
    server.client.put("/predictions/old-1", json={"input": {"text": "o"}})
    for n in range(3):  # the store keeps three: old-1 goes
        server.client.put(f"/predictions/newer-{n}", json={"input": {"text": "n"}})
    r = server.client.get("/predictions/old-1")
    assert r.status_code == 404
    assert r.json()["error"] == (
        "Prediction 'old-1' finished but was evicted from the store of recent ones: the server "
        "keeps the last 3 finished predictions within 6000 bytes (COGSERVE_RECENT_PREDICTIONS, "
        "COGSERVE_RECENT_PREDICTIONS_BYTES)")
    assert server.client.get("/predictions/newer-2").status_code == 200
    # a PUT of an evicted id runs the model again (it cannot be told apart from a new one)
    before = runs(server)
    again = server.client.put("/predictions/old-1", json={"input": {"text": "o"}}).json()
    assert again["output"] == f"{before + 1}:o"


def test_an_entry_over_the_byte_bound_is_not_kept(server):
    r = server.client.put("/predictions/big-1", json={"input": {"text": "b", "pad": 7000}})
    assert r.status_code == 200
    assert len(r.json()["output"]) > 7000  # the response itself is whole
    got = server.client.get("/predictions/big-1")
    assert got.status_code == 404
    assert "was evicted" in got.json()["error"]


def test_trainings_are_found_under_trainings_only(server):
    first = server.client.put("/trainings/train-1", json={"input": {"text": "t"}}).json()
    assert first["status"] == "succeeded"
    assert server.client.get("/trainings/train-1").json() == first
    assert server.client.put("/trainings/train-1", json={"input": {"text": "t"}}).json() == first
    assert server.client.post("/trainings/train-1/cancel").status_code == 200
    assert server.client.get("/predictions/train-1").status_code == 404
    assert server.client.post("/predictions/train-1/cancel").status_code == 404


def test_a_put_stream_of_a_finished_id_replays_its_events(serve):
    streaming = serve("stream")
    response, events = read_all(streaming, {"input": {"n": 3}}, method="PUT",
                                path="/predictions/sse-1")
    assert response.status_code == 200
    assert [name for name, _ in events][-1] == "completed"
    response, replay = read_all(streaming, {"input": {"n": 3}}, method="PUT",
                                path="/predictions/sse-1")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert replay == events
    assert streaming.client.get("/predictions/sse-1").json() == events[-1][1]


def test_a_file_output_is_kept_as_the_url_the_client_got(serve):
    files = serve("files_out")
    first = files.client.put("/predictions/file-1", json={"input": {"size": 5}}).json()
    assert first["output"].startswith("data:")
    assert files.client.get("/predictions/file-1").json()["output"] == first["output"]
