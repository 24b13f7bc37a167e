"""GET /metrics: scraped with prometheus_client's own text parser after a known mix of
requests (successes, failures, a refusal, a cancel, a training, uploads, downloads,
webhooks with a retry, a V2 inference), asserting counts and labels."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from filehub import FileServer
from filehub import Receiver as Hub
from harness import Server, free_port, wait_until, write_model
from prometheus_client.parser import text_string_to_metric_families
from receiver import Receiver

MODEL = '''
import os
import tempfile
import re
import time

from cog import BaseRunner, CancelationException, Path


class Runner(BaseRunner):
    def run(self, mode: str = "ok", doc: Path | None = None, sleep: float = 0.0) -> Path:
        if mode == "fail":
            raise ValueError("asked to fail")
        if mode == "crash":
            os._exit(3)
        if mode == "stubborn":  # ignores a cancel: its worker is replaced
            print("stubborn")  # the test cancels once this is seen: run() has begun
            try:
                time.sleep(sleep)
            except CancelationException:
                time.sleep(60)
        time.sleep(sleep)
        out = Path(tempfile.mkdtemp()) / "out.txt"
        out.write_bytes(b"x" * 100)
        return out


def train(steps: int = 1) -> str:
    return "trained"
'''
YAML = 'run: "run.py:Runner"\ntrain: "run.py:train"\n'
DOC = b"d" * 1000


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    response = httpx.get(url + "/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def wait_for_sample(url: str, name: str, expected: float, **labels: str) -> Samples:
    deadline = time.monotonic() + 20
    while True:
        samples = scrape(url)
        if value(samples, name, **labels) == expected or time.monotonic() > deadline:
            return samples
        time.sleep(0.05)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_model(tmp_path_factory.mktemp("metrics") / "metered", MODEL, YAML)


@pytest.fixture
def files() -> Iterator[tuple[FileServer, Hub]]:
    server, hub = FileServer(), Hub()
    server.files["/doc.bin"] = (DOC, "application/octet-stream", None)
    yield server, hub
    server.close()
    hub.close()


def test_a_known_mix_of_requests_is_counted_by_route_status_kind_and_outcome(
        model_dir: Path, files: tuple[FileServer, Hub], receiver: Any) -> None:
    fileserver, hub = files
    flaky: Receiver = receiver(fail_first=1, fail_status=503)
    with Server(model_dir, env={"COG_THROTTLE_RESPONSE_INTERVAL": "0"}) as server:
        c = server.client
        assert c.post("/predictions", json={"input": {}}).json()["status"] == "succeeded"
        uploaded = c.post("/predictions", json={
            "input": {"doc": fileserver.url + "/doc.bin"},
            "output_file_prefix": hub.url + "/up/"}).json()
        assert uploaded["status"] == "succeeded", uploaded
        assert c.post("/predictions", json={"input": {"mode": "fail"}}).json()["status"] == \
            "failed"
        missing = c.post("/predictions", json={"input": {"doc": fileserver.url + "/nope"}})
        assert missing.json()["status"] == "failed"
        assert c.post("/predictions", json={"input": {"colour": "red"}}).status_code == 422
        accepted = c.put("/predictions/to-cancel", headers={"Prefer": "respond-async"},
                         json={"input": {"sleep": 30}, "webhook": hub.url + "/hook",
                               "webhook_events_filter": ["completed"]})
        assert accepted.status_code == 202
        assert c.post("/predictions/to-cancel/cancel").status_code == 200
        assert c.post("/trainings", json={"input": {}}).json()["status"] == "succeeded"
        hooked = c.post("/predictions", json={"input": {}, "webhook": flaky.url,
                                              "webhook_events_filter": ["completed"]})
        assert hooked.json()["status"] == "succeeded"
        v2 = c.post("/v2/models/metered/infer", json={"inputs": [
            {"name": "mode", "datatype": "BYTES", "shape": [1], "data": ["ok"]}]})
        assert v2.status_code == 200, v2.text
        assert c.get("/health-check").status_code == 200

        hub.wait_for_hook(lambda body: body["status"] == "canceled")
        samples = wait_for_sample(server.url, "cogserve_webhook_deliveries_total", 2)

    def requests(route: str, method: str, status: str) -> float | None:
        return value(samples, "cogserve_http_requests_total", route=route, method=method,
                     status=status)

    assert requests("/predictions", "POST", "200") == 5
    assert requests("/predictions", "POST", "422") == 1
    assert requests("/predictions/{prediction_id}", "PUT", "202") == 1
    assert requests("/predictions/{prediction_id}/cancel", "POST", "200") == 1
    assert requests("/trainings", "POST", "200") == 1
    assert requests("/v2/models/{model_name}/infer", "POST", "200") == 1
    assert requests("/health-check", "GET", "200") is not None  # the harness polls it too
    assert value(samples, "cogserve_http_request_duration_seconds_count",
                 route="/predictions", method="POST") == 6

    def predictions(kind: str, outcome: str) -> float | None:
        return value(samples, "cogserve_predictions_total", kind=kind, outcome=outcome)

    assert predictions("prediction", "succeeded") == 4  # two plain, the hooked one, V2
    assert predictions("prediction", "failed") == 2  # raised; its input failed to download
    assert predictions("prediction", "canceled") == 1
    assert predictions("training", "succeeded") == 1
    assert value(samples, "cogserve_prediction_duration_seconds_count", kind="prediction") == 7
    assert value(samples, "cogserve_prediction_queue_wait_seconds_count", kind="prediction") \
        == 7
    assert value(samples, "cogserve_prediction_duration_seconds_count", kind="training") == 1

    assert value(samples, "cogserve_upload_bytes_total") == 100
    assert value(samples, "cogserve_uploads_total") == 1
    assert value(samples, "cogserve_upload_failures_total") == 0
    assert value(samples, "cogserve_download_bytes_total") == len(DOC)
    assert value(samples, "cogserve_download_failures_total") == 1
    assert value(samples, "cogserve_webhook_deliveries_total") == 2
    assert value(samples, "cogserve_webhook_retries_total") == 1
    assert value(samples, "cogserve_webhook_failures_total") == 0
    assert value(samples, "cogserve_v2_inferences_total", model="metered",
                 outcome="succeeded") == 1

    assert value(samples, "cogserve_slots") == 1
    assert value(samples, "cogserve_slots_in_use") == 0
    assert value(samples, "cogserve_health_state", state="READY") == 1
    assert value(samples, "cogserve_health_state", state="DEFUNCT") == 0
    assert value(samples, "cogserve_worker_starts_total") == 1
    assert value(samples, "cogserve_worker_crashes_total") == 0
    assert value(samples, "cogserve_setups_total", outcome="succeeded") == 1
    assert (value(samples, "cogserve_setup_duration_seconds") or 0) > 0
    assert value(samples, "process_resident_memory_bytes") is not None  # the parent's own
    # the model's record_metric values are never series
    assert not [name for name, _ in samples if name.startswith("cogserve_model")]


def test_a_restart_and_a_crash_on_a_separate_metrics_port(model_dir: Path) -> None:
    port = free_port()
    with Server(model_dir, "--metrics-port", str(port),
                env={"COGSERVE_CANCEL_TIMEOUT": "0.5"}) as server:
        assert server.client.get("/metrics").status_code == 404  # not on the API port
        metrics_url = f"http://127.0.0.1:{port}"
        assert value(scrape(metrics_url), "cogserve_health_state", state="READY") == 1
        # a run() that ignores its cancel: the worker is replaced (a restart, not a crash)
        server.client.put("/predictions/stubborn", headers={"Prefer": "respond-async"},
                          json={"input": {"mode": "stubborn", "sleep": 30}})
        # cancelled before run() begins, it would be dropped at start: no restart
        limit = time.monotonic() + 30
        while server.client.get("/predictions/stubborn").json()["status"] != "processing":
            assert time.monotonic() < limit, "the stubborn prediction never started"
            time.sleep(0.02)
        assert server.client.post("/predictions/stubborn/cancel").json()["status"] == \
            "canceled"
        restarted = wait_for_sample(metrics_url, "cogserve_worker_starts_total", 2)
        server.wait_for("READY")
        assert server.predict(mode="crash").json()["status"] == "failed"
        server.wait_for("DEFUNCT")
        samples = scrape(metrics_url)
    assert value(restarted, "cogserve_worker_restarts_total") == 1
    assert value(restarted, "cogserve_worker_crashes_total") == 0
    assert value(samples, "cogserve_worker_starts_total") == 2
    assert value(samples, "cogserve_worker_crashes_total") == 1
    assert value(samples, "cogserve_setups_total", outcome="succeeded") == 2
    assert value(samples, "cogserve_health_state", state="DEFUNCT") == 1
    assert value(samples, "cogserve_health_state", state="READY") == 0
    assert value(samples, "cogserve_predictions_total", kind="prediction",
                 outcome="failed") == 1
    assert value(samples, "cogserve_predictions_total", kind="prediction",
                 outcome="canceled") == 1


def test_metrics_can_be_turned_off(model_dir: Path) -> None:
    with Server(model_dir, "--no-metrics") as server:
        assert server.client.get("/metrics").status_code == 404
    with Server(model_dir, env={"COGSERVE_METRICS": "0"}) as server:
        assert server.client.get("/metrics").status_code == 404


def test_sse_clients_are_counted_while_connected_and_model_metrics_are_not_series(
        tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    with Server("stream") as server:
        body = {"input": {"n": 3, "gate": str(gate), "metric": True, "quiet": True}}
        with server.client.stream("POST", "/predictions", json=body,
                                  headers={"Accept": "text/event-stream"}) as response:
            lines = response.iter_lines()
            for line in lines:  # the first token is out: the stream is attached
                if line.startswith("event: output"):
                    break
            assert value(scrape(server.url), "cogserve_sse_clients") == 1
            gate.touch()
            assert any('"status":"succeeded"' in line for line in lines)
        samples = wait_for_sample(server.url, "cogserve_sse_clients", 0)
    assert value(samples, "cogserve_sse_clients") == 0
    assert value(samples, "cogserve_sse_streams_lagged_total") == 0
    assert value(samples, "cogserve_predictions_total", kind="prediction",
                 outcome="succeeded") == 1
    # record_metric("tokens", ...) is in the prediction, never a series or a label
    assert not [key for key in samples if "tokens" in key[0]
                or any("tokens" in v for _, v in key[1])]


def test_an_sse_stream_cut_for_lag_is_counted(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    # a 1-byte client buffer: the first live event overflows it, so the cut is certain
    with Server("stream", env={"COGSERVE_SSE_CLIENT_BUFFER": "1"}) as server:
        body = {"input": {"n": 3, "gate": str(gate), "quiet": True}}
        with server.client.stream("POST", "/predictions", json=body,
                                  headers={"Accept": "text/event-stream"}) as response:
            lines = response.iter_lines()
            assert next(lines).startswith("event: ")
            gate.touch()  # token 1 is made, and is live whatever happened to token 0
            assert any("SSE stream lagged" in line for line in lines)
        samples = wait_for_sample(server.url, "cogserve_sse_clients", 0)
    assert value(samples, "cogserve_sse_streams_lagged_total") == 1
    assert value(samples, "cogserve_sse_clients") == 0


def test_queue_length_slots_and_queue_wait_with_a_queue_and_two_workers(
        tmp_path: Path) -> None:
    gate, journal = tmp_path / "gate", tmp_path / "journal"
    with Server("gated", "--queue-size", "4", "--workers", "2") as server:
        c = server.client
        assert value(wait_for_sample(server.url, "cogserve_workers_ready", 2),
                     "cogserve_workers_ready") == 2
        for n in range(3):  # two hold both workers' slots, the third waits in the queue
            assert c.post("/predictions", headers={"Prefer": "respond-async"}, json={
                "id": f"q{n}", "input": {"text": f"q{n}", "gate": str(gate),
                                         "journal": str(journal)}}).status_code == 202
        samples = wait_for_sample(server.url, "cogserve_queue_length", 1)
        assert value(samples, "cogserve_queue_length") == 1
        assert value(samples, "cogserve_slots") == 2
        assert value(samples, "cogserve_slots_in_use") == 2
        assert value(samples, "cogserve_workers_ready") == 2
        assert value(samples, "cogserve_worker_starts_total") == 2  # both, in one registry
        assert value(samples, "cogserve_health_state", state="READY") == 1
        gate.touch()
        samples = wait_for_sample(server.url, "cogserve_prediction_queue_wait_seconds_count",
                                  3, kind="prediction")
    assert value(samples, "cogserve_queue_length") == 0
    assert value(samples, "cogserve_slots_in_use") == 0
    assert value(samples, "cogserve_predictions_total", kind="prediction",
                 outcome="succeeded") == 3
    # the queued one waited for a slot: the queue-wait sum is more than zero
    assert (value(samples, "cogserve_prediction_queue_wait_seconds_sum",
                  kind="prediction") or 0) > 0


def test_no_gpu_series_without_nvml_and_each_worker_logs_its_gpu() -> None:
    """Without the `gpu` extra (or, with it, without a driver) /metrics has no GPU series;
    `--gpus` puts each worker's CUDA_VISIBLE_DEVICES in its ready line."""
    with Server("gated", "--workers", "2", "--gpus", "0,1") as server:
        samples = wait_for_sample(server.url, "cogserve_workers_ready", 2)
        assert value(samples, "cogserve_workers_ready") == 2
        assert not [name for name, _ in samples if "gpu" in name]
        # the log is written by a thread: the ready lines may follow the metric a little
        ready = [re.compile(rf"worker {n} is ready \(pid \d+, CUDA_VISIBLE_DEVICES={n}\)")
                 for n in (0, 1)]
        wait_until(lambda: all(line.search(server.output()) for line in ready))


# NVML as the server process sees it: one GPU, whose running processes are the server's
# own children (its workers), each holding (1 + its position) GiB. NVML is the process
# boundary (a C library over the driver), so this module stands in for `pynvml`.
FAKE_NVML = '''
import os
from types import SimpleNamespace


class NVMLError(Exception):
    pass


def nvmlInit():
    pass


def nvmlShutdown():
    pass


def nvmlDeviceGetCount():
    return 1


def nvmlDeviceGetHandleByIndex(index):
    return index


def nvmlDeviceGetName(handle):
    return "Stand-in GPU"


def nvmlDeviceGetUUID(handle):
    return "GPU-stand-in"


def nvmlDeviceGetUtilizationRates(handle):
    return SimpleNamespace(gpu=42, memory=0)


def nvmlDeviceGetMemoryInfo(handle):
    return SimpleNamespace(used=3 << 30, total=80 << 30, free=77 << 30)


def _children():
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                    found.append(int(entry))
        except (OSError, ValueError):
            pass
    return sorted(found)


def nvmlDeviceGetComputeRunningProcesses(handle):
    return [SimpleNamespace(pid=pid, usedGpuMemory=(n + 1) << 30)
            for n, pid in enumerate(_children())]


def nvmlDeviceGetProcessUtilization(handle, since):
    raise NVMLError("Not Supported")
'''


def test_gpu_series_name_each_worker_by_its_pid(tmp_path: Path) -> None:
    """With `pynvml` importable (here a stand-in), /metrics has the GPU's series and each
    worker's memory, matched by the pid the runtime reported when it started it."""
    (tmp_path / "pynvml.py").write_text(FAKE_NVML)
    env = {"PYTHONPATH": str(tmp_path)}
    with Server("gated", "--workers", "2", env=env) as server:
        samples = wait_for_sample(server.url, "cogserve_workers_ready", 2)
        health = server.client.get("/health-check").json()
    pids = sorted(w["pid"] for w in health["workers"])
    by_worker = {dict(labels)["worker"]: v for (name, labels), v in samples.items()
                 if name == "cogserve_worker_gpu_memory_bytes"}
    # the stand-in gives the children in pid order 1 and 2 GiB: each worker gets its own
    workers = {str(w["id"]): w["pid"] for w in health["workers"]}
    assert by_worker == {w: float((pids.index(pid) + 1) << 30) for w, pid in workers.items()}
    assert value(samples, "cogserve_gpu_utilization_ratio", gpu="0") == 0.42
    assert value(samples, "cogserve_gpu_memory_total_bytes", gpu="0") == 80 << 30
    assert samples.get(("cogserve_gpu_info", frozenset(
        {"gpu": "0", "name": "Stand-in GPU", "uuid": "GPU-stand-in"}.items()))) == 1
    assert not [name for name, _ in samples if name == "cogserve_worker_gpu_utilization_ratio"]
