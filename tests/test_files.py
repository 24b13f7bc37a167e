"""Files in and out, end to end: real servers for downloads (http, self-signed https) and
uploads, a real `cogserve serve` with TMPDIR pointed at a test-owned folder that must be
empty of prediction files after every case, and gone entirely once the server exits."""

from __future__ import annotations

import base64
import hashlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from filehub import FileServer, Receiver, self_signed_cert
from harness import Server, free_port

MiB = 1 << 20
BLOCK = b"0123456789abcdef" * 65536  # what tests/models/files_out writes


def pattern(size: int) -> bytes:
    return (BLOCK * (size // len(BLOCK) + 1))[:size]


def leftovers(tmp: Path) -> list[str]:
    """Everything under the server's TMPDIR except its per-server folder and the empty
    prediction folders a worker keeps for its next predictions (`worker/tempdirs.py`)."""
    found = []
    for path in sorted(tmp.rglob("*")):
        rel = path.relative_to(tmp)
        if len(rel.parts) == 1 and rel.name.startswith("cogserve-") and path.is_dir():
            continue
        if rel.name.startswith("cogserve-in-") and path.is_dir() and not any(path.iterdir()):
            continue
        found.append(str(rel))
    return found


def stop_gracefully(server: Server) -> None:
    os.kill(server.pid, signal.SIGTERM)
    server.process.wait(timeout=20)


def peak_rss(pid: int) -> int:
    """The process's high-water resident set size, in bytes (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


class Hub:
    def __init__(self, folder: Path) -> None:
        self.cert = self_signed_cert(folder)
        self.http = FileServer()
        self.https = FileServer(self.cert)
        self.receiver = Receiver()

    def close(self) -> None:
        self.http.close()
        self.https.close()
        self.receiver.close()


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    hub = Hub(tmp_path_factory.mktemp("certs"))
    yield hub
    hub.close()


@pytest.fixture
def receiver(hub: Hub) -> Iterator[Receiver]:
    receiver = hub.receiver
    receiver.uploads.clear()
    receiver.hooks.clear()
    receiver.location, receiver.fail_status = "absolute", None
    yield receiver


def _module_server(tmp_path_factory: pytest.TempPathFactory, model: str, hub: Hub,
                   **env: str) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("tmpdir")
    memory = tmp_path_factory.mktemp("memory")  # where data: URL inputs go (/dev/shm)
    server = Server(model, env={"TMPDIR": str(tmp), "COGSERVE_MEMORY_DIR": str(memory),
                                "SSL_CERT_FILE": str(hub.cert[0]), **env})
    server.tmp = tmp  # type: ignore[attr-defined]
    server.memory = memory  # type: ignore[attr-defined]
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory, hub: Hub) -> Iterator[Server]:
    yield from _module_server(tmp_path_factory, "files_in", hub, COGSERVE_DOWNLOAD_TIMEOUT="2")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory, hub: Hub) -> Iterator[Server]:
    yield from _module_server(tmp_path_factory, "files_out", hub)


# ---------------------------------------------------------------- inputs


def test_http_https_data_and_list_inputs_arrive_as_local_files(inputs, hub):
    hub.http.files["/img/photo.png"] = (b"png bytes", "image/png", None)
    hub.http.files["/download?id=3"] = (b"a,b\n1,2\n", "text/csv", "report.csv")
    hub.http.files["/noext"] = (b"{}", "application/json", None)
    hub.https.files["/secure/notes.txt"] = (b"over tls", "text/plain", None)
    body = inputs.predict(
        p=f"{hub.http.url}/img/photo.png",
        f="data:text/plain;base64," + base64.b64encode(b"handle me").decode(),
        ps=[f"{hub.https.url}/secure/notes.txt", "data:,plain%20text",
            f"{hub.http.url}/download?id=3", f"{hub.http.url}/noext"],
    ).json()
    assert body["status"] == "succeeded", body
    out = body["output"]
    assert out["p"]["name"] == "photo.png" and out["p"]["data"] == "png bytes"
    assert out["p"]["is_path"] and out["p"]["local"]
    assert out["f"] == {"read": "handle me", "has_read": True}
    assert [x["name"] for x in out["ps"]] == ["notes.txt", "input.1.txt", "report.csv",
                                             "noext.json"]
    assert [x["data"] for x in out["ps"]] == ["over tls", "plain text", "a,b\n1,2\n", "{}"]
    # one folder per prediction, inside the server's TMPDIR; the model's tempfiles too;
    # a data: URL's file is in the prediction's folder in memory (COGSERVE_MEMORY_DIR)
    folder = out["p"]["dir"]
    assert [x["dir"] == folder for x in out["ps"]] == [True, False, True, True]
    assert out["junk_dir"] == folder and folder.startswith(str(inputs.tmp))
    in_memory = Path(out["ps"][1]["dir"])
    assert in_memory.parent.parent == inputs.memory and in_memory.name.startswith("cogserve-in-")
    assert body["input"]["ps"][1] == "data:,plain%20text"
    assert leftovers(inputs.tmp) == [] and leftovers(inputs.memory) == []


@pytest.mark.parametrize("case", ["404", "refused", "timeout", "list-item"])
def test_download_failure_fails_the_prediction_naming_the_input(inputs, hub, case):
    hub.http.files["/ok.txt"] = (b"ok", "text/plain", None)
    if case == "404":
        body = inputs.predict(p=f"{hub.http.url}/missing.png").json()
        expected = ("input p:", "HTTP 404")
    elif case == "refused":
        body = inputs.predict(p=f"http://127.0.0.1:{free_port()}/x.png").json()
        expected = ("input p:", "refused")
    elif case == "timeout":  # COGSERVE_DOWNLOAD_TIMEOUT=2 on this server
        body = inputs.predict(p=f"{hub.http.url}/slow/x.png").json()
        expected = ("input p:", "timed out")
    else:
        body = inputs.predict(ps=[f"{hub.http.url}/ok.txt", f"{hub.http.url}/gone.txt"]).json()
        expected = ("input ps[1]:", "HTTP 404")
    assert body["status"] == "failed", body
    for text in expected:
        assert text in body["error"], body["error"]
    assert body["logs"] == body["error"] + "\n"  # one clear line, not our traceback
    assert leftovers(inputs.tmp) == []
    assert inputs.predict().json()["status"] == "succeeded"  # the worker is fine


@pytest.mark.parametrize(("value", "message"), [
    ("file:///etc/hostname", "is not a URL"),
    ("/etc/hostname", "is not a URL"),
    ("ftp://127.0.0.1/x", "is not a URL"),
    ("data:text/plain;base64,@@not-base64@@", "malformed data URL: the data is not valid"),
    ("data:text/plain;base64,YWJj=", "malformed data URL"),
    ("data:text/plain", "malformed data URL: no comma"),
])
def test_unfetchable_file_inputs_are_422_before_run(inputs, value, message):
    for payload, loc in (({"p": value}, ["p"]), ({"ps": ["data:,ok", value]}, ["ps/1"])):
        r = inputs.client.post("/predictions", json={"input": payload})
        assert r.status_code == 422, r.text
        detail = r.json()["detail"]
        assert detail[0]["loc"] == ["body", "input", *loc], detail
        assert message in detail[0]["msg"], detail
    assert inputs.health()["status"] == "READY"
    assert leftovers(inputs.tmp) == []


def test_secret_is_redacted_in_response_logs_and_model(inputs):
    value = "hunter2-do-not-print-me"
    r = inputs.predict(secret=value, text="x")
    body = r.json()
    assert body["status"] == "succeeded", body
    assert value not in r.text
    assert body["input"]["secret"] == "**********"
    assert body["output"]["secret"] == {"str": "**********", "repr": "Secret(**********)",
                                        "length": len(value)}
    assert "str=********** repr=Secret(**********)" in body["logs"]
    assert value not in inputs.output()  # the server's own stdout/stderr


def test_input_over_6_mib_goes_through_a_spill_file_that_is_removed(inputs):
    text = "x" * (7 * MiB)
    body = inputs.predict(text=text).json()
    assert body["status"] == "succeeded", body["error"]
    assert body["output"]["text"] == {"length": 7 * MiB, "spilled": True,
                                      "inline_input": False, "spill_file_left": False}
    small = inputs.predict(text="y" * 1000).json()["output"]["text"]
    assert small["spilled"] is False and small["inline_input"] is True
    assert leftovers(inputs.tmp) == []


def test_cancel_removes_the_prediction_files(inputs, hub, receiver):
    hub.http.files["/big.bin"] = (b"z" * 100_000, "application/octet-stream", None)
    r = inputs.client.post("/predictions", headers={"Prefer": "respond-async"}, json={
        "id": "cancel-me", "input": {"p": f"{hub.http.url}/big.bin", "sleep": 60},
        "webhook": f"{receiver.url}/hook"})
    assert r.status_code == 202
    receiver.wait_for_hook(lambda b: "sleeping" in (b.get("logs") or ""))
    assert any(p.name == "big.bin" for p in inputs.tmp.rglob("*"))  # it was there
    assert inputs.client.post("/predictions/cancel-me/cancel").status_code == 200
    receiver.wait_for_hook(lambda b: b["status"] == "canceled")
    inputs.wait_for("READY")
    assert leftovers(inputs.tmp) == []


def test_worker_restart_and_server_exit_remove_every_temp_file(tmp_path, hub, receiver):
    disk, memory = tmp_path / "disk", tmp_path / "memory"
    disk.mkdir()
    memory.mkdir()
    server = Server("files_in", env={"TMPDIR": str(disk), "COGSERVE_MEMORY_DIR": str(memory),
                                     "COGSERVE_CANCEL_TIMEOUT": "1"})
    try:
        hub.http.files["/keep.txt"] = (b"kept", "text/plain", None)
        r = server.client.post("/predictions", headers={"Prefer": "respond-async"}, json={
            "id": "stubborn", "input": {"p": f"{hub.http.url}/keep.txt", "sleep": 60,
                                        "swallow": True, "ps": ["data:,in%20memory"]},
            "webhook": f"{receiver.url}/hook"})
        assert r.status_code == 202
        receiver.wait_for_hook(lambda b: "sleeping" in (b.get("logs") or ""))
        assert leftovers(disk) != []  # the input and the model's tempfile
        assert leftovers(memory) != []  # the data: URL's file
        old_workers = server.worker_pids()
        server.client.post("/predictions/stubborn/cancel")
        receiver.wait_for_hook(lambda b: b["status"] == "canceled")
        server.wait_for("READY")
        assert server.worker_pids() != old_workers  # a new worker
        assert leftovers(disk) == [] and leftovers(memory) == []
        assert server.predict(sleep=0).json()["status"] == "succeeded"
        stop_gracefully(server)
        assert server.process.returncode == 0
        # the per-server folders are gone too
        assert list(disk.iterdir()) == [] and list(memory.iterdir()) == []
    finally:
        server.stop()



# ---------------------------------------------------------------- outputs


def test_file_outputs_default_to_data_urls_with_mime_types(outputs):
    body = outputs.predict(mode="named", name="result.txt", size=5).json()
    assert body["output"] == "data:text/plain;base64," + base64.b64encode(b"01234").decode()
    body = outputs.predict(mode="temp", name="x.png", size=3).json()
    assert body["output"] == "data:image/png;base64," + base64.b64encode(b"012").decode()
    body = outputs.predict(mode="handle", name="h.json", size=2).json()
    assert body["output"] == "data:application/json;base64," + base64.b64encode(b"01").decode()
    assert leftovers(outputs.tmp) == []


def test_file_outputs_upload_to_output_file_prefix(outputs, hub, receiver):
    prefix = f"{receiver.url}/up"

    def run(**inputs):
        r = outputs.client.post("/predictions", json={"input": inputs,
                                                      "output_file_prefix": prefix})
        body = r.json()
        assert body["status"] == "succeeded", body
        return body["output"]

    assert run(mode="named", name="result.txt", size=5) == f"{receiver.url}/stored/result.txt"
    up = receiver.uploads[-1]
    assert (up.path, up.name, up.content_type, up.head) == ("/up/", "result.txt",
                                                            "text/plain", b"01234")
    run(mode="temp", name="x.png", size=4)  # tmpXXXXXXXX.png means nothing to a client
    assert (receiver.uploads[-1].name, receiver.uploads[-1].content_type) == ("output.png",
                                                                              "image/png")
    receiver.location = None
    assert run(mode="named", name="plain.txt") == f"{prefix}/plain.txt"
    receiver.location = "relative"
    assert run(mode="named", name="r.txt") == f"{receiver.url}/stored/rel-r.txt"
    hub.http.files["/cat.jpg"] = (b"meow", "image/jpeg", None)
    receiver.location = "absolute"
    assert run(mode="echo", src=f"{hub.http.url}/cat.jpg") == f"{receiver.url}/stored/cat.jpg"
    assert receiver.uploads[-1].head == b"meow"
    # an input written in memory, returned as the output: still there to be uploaded
    echoed = run(mode="echo", src="data:image/png;base64," + base64.b64encode(b"png").decode())
    assert echoed == f"{receiver.url}/stored/input.png"
    assert receiver.uploads[-1].head == b"png"
    assert len(receiver.uploads) == 6
    assert leftovers(outputs.tmp) == [] and leftovers(outputs.memory) == []


def test_upload_failure_fails_the_prediction(outputs, receiver):
    receiver.fail_status = 500
    body = outputs.client.post("/predictions", json={
        "input": {"name": "result.txt"}, "output_file_prefix": receiver.url}).json()
    assert body["status"] == "failed"
    assert "uploading result.txt" in body["error"] and "HTTP 500" in body["error"]
    body = outputs.client.post("/predictions", json={
        "input": {"name": "result.txt"},
        "output_file_prefix": f"http://127.0.0.1:{free_port()}/"}).json()
    assert body["status"] == "failed" and "ConnectError" in body["error"], body
    assert leftovers(outputs.tmp) == []
    assert outputs.predict().json()["status"] == "succeeded"


def test_50_mib_output_streams_without_copies_in_the_parent(outputs, receiver):
    size = 50 * MiB
    digest = hashlib.sha256(pattern(size)).hexdigest()
    before = peak_rss(outputs.pid)
    body = outputs.client.post("/predictions", json={
        "input": {"name": "big.bin", "size": size}, "output_file_prefix": receiver.url}).json()
    assert body["status"] == "succeeded", body
    assert (receiver.uploads[-1].size, receiver.uploads[-1].sha256) == (size, digest)
    after_upload = peak_rss(outputs.pid)
    # streamed: the parent never held the file (a single copy would be 50 MiB)
    assert after_upload - before < 20 * MiB, (before, after_upload)

    r = outputs.predict(name="big.bin", size=size)
    url = r.json()["output"]
    head = "data:application/octet-stream;base64,"
    assert url.startswith(head)
    assert hashlib.sha256(base64.b64decode(url[len(head):])).hexdigest() == digest
    after_data = peak_rss(outputs.pid)
    # the encoded text (67 MiB) is needed twice at most: the str and the response body
    assert after_data - before < 3 * 67 * MiB, (before, after_data)
    print(f"parent peak RSS: start {before / MiB:.0f} MiB, after upload "
          f"{after_upload / MiB:.0f} MiB, after data URL {after_data / MiB:.0f} MiB")
    assert leftovers(outputs.tmp) == []


def test_files_in_structured_outputs_get_indexed_names(tmp_path, serve, receiver):
    server = serve("files_object", env={"TMPDIR": str(tmp_path)})
    body = server.predict(n=2).json()
    assert body["output"]["image"].startswith("data:image/png;base64,")
    assert [u.split(";")[0] for u in body["output"]["extras"]] == [
        "data:text/plain", "data:text/plain", "data:text/markdown"]
    body = server.client.post("/predictions", json={
        "input": {"n": 2}, "output_file_prefix": receiver.url}).json()
    assert body["output"]["note"] == "ok"
    names = [u.name for u in receiver.uploads]
    assert names == ["output.png", "output.0.txt", "output.1.txt", "notes.md"]
    assert body["output"]["extras"][2] == f"{receiver.url}/stored/notes.md"
    assert leftovers(tmp_path) == []


def test_iterator_files_upload_one_by_one_to_upload_url_sync_and_async(tmp_path, serve,
                                                                       receiver):
    server = serve("files_iter", "--upload-url", f"{receiver.url}/bucket",
                   env={"TMPDIR": str(tmp_path)})
    body = server.predict(n=3, count_url=f"{receiver.url}/count").json()
    assert body["status"] == "succeeded", body
    # each file reached the receiver before the model made the next one
    for i in (1, 2, 3):
        assert f"receiver had {i} after yield {i}" in body["logs"]
    assert body["output"] == [f"{receiver.url}/stored/output.{i}.txt" for i in range(3)]
    assert [u.head for u in receiver.uploads] == [b"part 0", b"part 1", b"part 2"]
    assert {u.path for u in receiver.uploads} == {"/bucket/"}
    assert leftovers(tmp_path) == []

    r = server.client.post("/predictions", headers={"Prefer": "respond-async"}, json={
        "input": {"n": 2}, "webhook": f"{receiver.url}/hook"})
    assert r.status_code == 202
    done = receiver.wait_for_hook(lambda b: b["status"] == "succeeded")
    assert done["output"] == [f"{receiver.url}/stored/output.{i}.txt" for i in range(2)]
    assert len(receiver.uploads) == 5
    server.wait_for("READY")
    assert leftovers(tmp_path) == []

    receiver.fail_status = 503  # the first upload fails: the prediction fails, the rest stop
    body = server.client.post("/predictions", json={
        "input": {"n": 3}, "output_file_prefix": f"{receiver.url}/other"}).json()
    assert body["status"] == "failed"
    assert "uploading output.0.txt" in body["error"] and "HTTP 503" in body["error"], body
    # the worker hands its folder over with its last message, which may come just after
    deadline = time.monotonic() + 10
    while leftovers(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert leftovers(tmp_path) == []
    receiver.fail_status = None
    assert server.predict(n=1).json()["status"] == "succeeded"


def test_async_predictions_each_get_their_own_folder(tmp_path, serve, hub):
    from concurrent.futures import ThreadPoolExecutor

    server = serve("files_async", env={"TMPDIR": str(tmp_path)})
    hub.http.files["/one.txt"] = (b"one", "text/plain", None)
    hub.http.files["/two.txt"] = (b"two", "text/plain", None)
    with ThreadPoolExecutor(2) as pool:
        bodies = list(pool.map(lambda n: server.predict(p=f"{hub.http.url}/{n}.txt").json(),
                               ["one", "two"]))
    for body, word in zip(bodies, ["ONE", "TWO"], strict=True):
        assert body["status"] == "succeeded", body
        assert body["output"]["file"] == ("data:text/plain;base64," +
                                          base64.b64encode(word.encode()).decode())
    assert bodies[0]["output"]["folder"] != bodies[1]["output"]["folder"]
    assert leftovers(tmp_path) == []
