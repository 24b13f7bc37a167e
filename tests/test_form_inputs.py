"""Create requests sent as forms (a cogserve addition, http/form_document.py): real
clients (curl's `-F` and `-d`, httpx's `files=`) against a real server, the files
checked where the model reads them, and every malformed form refused with its reason
while the server goes on serving."""

from __future__ import annotations

import base64
import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Server, wait_until

MAX_BODY = 64 * 1024


@pytest.fixture(scope="module")
def files() -> Iterator[Server]:
    server = Server("files_in", "--max-body-bytes", str(MAX_BODY))
    try:
        yield server
    finally:
        server.stop()


def curl(server: Server, path: str, *args: str) -> tuple[int, str]:
    """curl's answer: status and body (`-F`/`-d` make the form, as a user would)."""
    done = subprocess.run(["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", *args,
                           server.url + path], capture_output=True, text=True, timeout=60,
                          check=True)
    body, _, status = done.stdout.rpartition("\n")
    return int(status), body


def test_curl_uploads_files_and_fields_that_the_model_reads(files, tmp_path: Path):
    photo = tmp_path / "photo.jpg"
    photo.write_bytes(b"JFIF, or nearly: the model reads it as text")
    (tmp_path / "a.txt").write_text("first")
    (tmp_path / "b.txt").write_text("second")
    status, body = curl(files, "/predictions", "-F", f"f=@{photo}", "-F", "text=hello",
                        "-F", f"ps=@{tmp_path / 'a.txt'}", "-F", f"ps=@{tmp_path / 'b.txt'}",
                        "-F", "sleep=0.01")
    assert status == 200, body
    prediction = json.loads(body)
    assert prediction["status"] == "succeeded", prediction
    output = prediction["output"]
    assert output["f"]["read"] == photo.read_text()
    assert [p["data"] for p in output["ps"]] == ["first", "second"]
    assert all(p["local"] and p["is_path"] for p in output["ps"])
    assert output["text"]["length"] == 5
    # echoed as the data URLs a JSON client would have sent, the field typed (a float)
    sent = prediction["input"]
    assert sent["f"] == "data:image/jpeg;base64," + base64.b64encode(photo.read_bytes()).decode()
    assert sent["sleep"] == 0.01 and sent["text"] == "hello"


def test_httpx_files_and_url_encoded_fields(files):
    answer = files.client.post("/predictions", files={"p": ("notes.txt", b"in a file")},
                               data={"text": "abc", "swallow": "false"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["output"]["p"]["data"] == "in a file"
    # no file: URL-encoded (curl -d); a file input given a URL as text takes it as JSON does
    data_url = "data:text/plain;base64," + base64.b64encode(b"from a url").decode()
    status, body = curl(files, "/predictions", "-d", "text=x y", "--data-urlencode",
                        f"p={data_url}")
    assert status == 200, body
    output = json.loads(body)["output"]
    assert output["p"]["data"] == "from a url" and output["text"]["length"] == 3
    # curl -d sends non-ASCII text as its raw UTF-8 bytes: read as the same text
    status, body = curl(files, "/predictions", "-d", "text=héllo wörld")
    assert status == 200, body
    assert json.loads(body)["output"]["text"]["length"] == len("héllo wörld")


@pytest.mark.parametrize("args, status, words", [
    (["-H", "Content-Type: multipart/form-data", "--data-binary", "text=1"], 400,
     "names no boundary"),
    (["-H", "Content-Type: multipart/form-data; boundary=zz", "--data-binary",
      '--zz\r\nContent-Disposition: form-data; name="text"\r\n\r\ncut short'], 400,
     "Unexpected end of multipart stream"),
    (["-d", "text"], 400, "application/x-www-form-urlencoded"),
    (["-F", "text=a", "-F", "text=b"], 422, "given more than once"),
    (["-d", "text=%ff"], 422, "is not UTF-8 text"),
    (["-F", "sleep=soon"], 422, "sleep"),
    (["-F", "unknown=1"], 422, "'unknown' was unexpected"),
    (["-F", "f=@-;filename=big.bin"], 413, "limit"),
    (["-H", "Content-Type: text/csv", "-d", "a,b"], 415, "application/json"),
])
def test_a_malformed_form_is_refused_with_its_reason_and_nothing_runs(files, args, status,
                                                                       words):
    done = subprocess.run(
        ["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", *args, files.url + "/predictions"],
        input=b"x" * (MAX_BODY + 1), capture_output=True, timeout=60, check=True)
    body, _, code = done.stdout.decode().rpartition("\n")
    assert int(code) == status, body
    assert words in body
    # the server goes on serving
    assert files.predict(text="still here").json()["status"] == "succeeded"


def test_put_with_a_form_is_idempotent_and_answers_async(files):
    prediction_id = uuid.uuid4().hex[:26]
    form = {"text": "async", "sleep": "0.2"}
    headers = {"Prefer": "respond-async"}
    first = files.client.put(f"/predictions/{prediction_id}", data=form, headers=headers)
    assert first.status_code == 202, first.text
    again = files.client.put(f"/predictions/{prediction_id}", data=form, headers=headers)
    assert again.status_code == 202 and again.json()["id"] == prediction_id

    def finished() -> dict | None:
        body = files.client.get(f"/predictions/{prediction_id}").json()
        return body if body["status"] == "succeeded" else None

    done = wait_until(finished)
    assert done["output"]["text"]["length"] == 5 and done["input"]["sleep"] == 0.2


def test_a_training_takes_a_form_typed_by_the_training_schema():
    with Server("trainings_sync") as server:
        status, body = curl(server, "/trainings", "-d", "text=model", "-d", "steps=3")
        assert status == 200, body
        assert json.loads(body)["output"] == "trained model x3"
        # steps has ge=1: the form's text typed, then checked as JSON would be
        status, body = curl(server, "/trainings", "-d", "text=model", "-d", "steps=0")
        assert status == 422 and "steps" in body
