"""The playground at /docs in a real headless Chromium, against real servers.

Debian's `chromium` (scripts/test installs it) driven by `playwright`; no browser is
downloaded. One browser for the module, a fresh context (storage, routes) per test, one
server per model shared by the tests that use it.

Screenshots go to the test's temporary folder; with COGSERVE_PLAYGROUND_SCREENSHOTS=DIR
(scripts/playground-screenshots sets it to docs/images) they are copied there too.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from filehub import Receiver
from harness import Server

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
SCREENSHOTS = "COGSERVE_PLAYGROUND_SCREENSHOTS"
WAIT_MS = 20_000  # a ceiling for conditions, never a pass/fail timing

sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing: scripts/test installs Debian's chromium")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _server(model: str, *args: str) -> Callable[[], Iterator[Server]]:
    def fixture() -> Iterator[Server]:
        with Server(model, *args) as server:
            yield server
    return fixture


inputs_server = pytest.fixture(scope="module")(_server("contract/inputs", "--max-body-bytes",
                                                       "65536"))
image_server = pytest.fixture(scope="module")(_server("playground_image"))
stream_server = pytest.fixture(scope="module")(_server("stream"))
cancel_server = pytest.fixture(scope="module")(_server("cancel_sync"))


@pytest.fixture
def open_page(browser: Any) -> Iterator[Callable[..., Any]]:
    """`open_page(server, **context options)`: /docs loaded and its form built.

    Any uncaught error in the page's script fails the test.
    """
    contexts: list[Any] = []
    errors: list[str] = []

    def start(server: Server, path: str = "/docs", route: Any = None, ready: bool = True,
              **options: Any) -> Any:
        context = browser.new_context(viewport=options.pop("viewport",
                                                           {"width": 1280, "height": 900}),
                                      **options)
        contexts.append(context)
        if route is not None:
            context.route("**/*", route)
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(server.url + path)
        if ready:
            page.wait_for_selector("body[data-ready=true]")
        return page

    yield start
    for context in contexts:
        context.close()
    assert not errors, f"the page's script failed: {errors}"


def screenshot(page: Any, tmp_path: pathlib.Path, name: str) -> None:
    path = tmp_path / name
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    target = os.environ.get(SCREENSHOTS)
    if target:
        shutil.copy(path, pathlib.Path(target) / name)


def field(page: Any, name: str) -> Any:
    return page.locator(f'[data-field="{name}"]')


def status(page: Any) -> Any:
    return page.get_by_test_id("status")


def output_text(page: Any) -> str:
    return page.get_by_test_id("output").inner_text()


def test_many_inputs_are_filled_sent_and_shown(open_page: Any, inputs_server: Server,
                                               tmp_path: pathlib.Path) -> None:
    page = open_page(inputs_server)
    page.fill("#in-text", "hello")
    page.fill("#in-count", "7")
    page.check("#in-flag")
    page.fill("#in-token", "s3cret")
    page.fill("#in-words", "x\ny")
    page.fill("#in-numbers", "1\n2")
    page.fill("#in-extra", '{"k": [1, 2]}')
    page.fill("#in-either", '["p", "q"]')  # str | list[str]: JSON is the list
    page.fill("#in-mixed", "2.5")
    page.select_option("#in-color", label="blue")
    page.select_option("#in-size", label="3")
    page.fill("#in-maybe", "two\nlines")
    page.set_input_files("#in-image", files=[{"name": "note.txt", "mimeType": "text/plain",
                                              "buffer": b"file body"}])
    page.get_by_text("note.txt").wait_for()  # `either` needs JSON: sent as a data URL
    page.get_by_role("button", name="Run").click()
    page.wait_for_selector(".status.succeeded")

    received = json.loads(page.locator(".output pre.json").inner_text())
    values = {name: entry["value"] for name, entry in received.items()}
    assert values["text"] == "hello"
    assert values["count"] == 7
    assert values["flag"] is True
    assert values["token"] == {"secret": "**********", "value": "s3cret"}
    assert values["words"] == ["x", "y"]
    assert values["numbers"] == [1, 2]
    assert values["extra"] == {"k": [1, 2]}
    assert values["either"] == ["p", "q"]
    assert values["mixed"] == 2.5
    assert values["color"] == "blue" and values["size"] == 3
    assert values["maybe"] == "two\nlines"
    assert values["image"] == {"path": True, "content": "file body"}
    assert values["plain"] == 7 and values["mode"] == "fast"  # defaults, as shown
    # the marks the form shows: required, deprecated, a masked secret
    assert "required" in field(page, "text").inner_text()
    assert "deprecated" in field(page, "old").inner_text()
    assert page.get_attribute("#in-token", "type") == "password"
    # the request as curl is the one that was sent; the run is listed under Recent
    curl = page.get_by_test_id("curl").text_content()
    ident = page.locator(".ident").inner_text()
    assert f"-X PUT '{inputs_server.url}/predictions/{ident}'" in curl
    assert '"text":"hello"' in curl
    assert ident in page.get_by_test_id("recent").inner_text()
    assert "predict_time" in page.get_by_test_id("metrics").inner_text()
    screenshot(page, tmp_path, "playground-inputs.png")


def test_validation_errors_appear_at_their_fields(open_page: Any, inputs_server: Server) -> None:
    page = open_page(inputs_server)
    # caught in the page: nothing is sent
    page.fill("#in-text", "abc")
    page.fill("#in-numbers", "1\nseven")
    page.get_by_role("button", name="Run").click()
    assert "line 2" in field(page, "numbers").locator(".field-error").inner_text()
    assert status(page).inner_text() == "idle"
    # refused by the server (422): each message at its own field
    page.fill("#in-numbers", "-1\n-2")
    page.fill("#in-text", "ABC")
    page.fill("#in-count", "99")
    page.get_by_role("button", name="Run").click()
    page.wait_for_selector(".status.invalid")
    text_error = field(page, "text").locator(".field-error").inner_text()
    count_error = field(page, "count").locator(".field-error").inner_text()
    numbers_error = field(page, "numbers").locator(".field-error").inner_text()
    assert text_error == '"ABC" does not match "^[a-z]+$"'
    assert count_error == "99 is greater than the maximum of 10"
    assert numbers_error.splitlines() == ["0: -1 is less than the minimum of 0",
                                          "1: -2 is less than the minimum of 0"]
    assert field(page, "count").get_attribute("class") == "field invalid"
    assert field(page, "flag").locator(".field-error").inner_text() == ""


def test_an_image_output_is_shown_as_an_image(open_page: Any, image_server: Server,
                                              tmp_path: pathlib.Path) -> None:
    page = open_page(image_server, color_scheme="dark")
    page.select_option("#in-color", label="teal")
    page.get_by_role("button", name="Run").click()
    page.wait_for_selector(".status.succeeded")
    image = page.locator(".output img")
    # decoded by the browser: a real picture of the asked size, not a broken icon
    assert image.evaluate("img => img.complete && img.naturalWidth") == 320
    assert image.get_attribute("src").startswith("data:image/png;base64,")
    assert page.locator(".output a[download]").get_attribute("download") == "output.png"
    assert "drawing 320x180 teal" in page.get_by_test_id("logs").inner_text()
    screenshot(page, tmp_path, "playground-image.png")


def test_an_uploaded_image_is_shown_from_its_url(open_page: Any) -> None:
    receiver = Receiver(serve_back=True)
    try:
        with Server("playground_image", "--upload-url", receiver.url + "/upload/") as server:
            page = open_page(server)
            page.get_by_role("button", name="Run").click()
            page.wait_for_selector(".status.succeeded")
            image = page.locator(".output img")
            src = image.get_attribute("src")
            assert src.startswith(receiver.url + "/stored/") and src.endswith(".png")
            image.evaluate("img => img.decode()")  # fetched from the upload server, decoded
            assert image.evaluate("img => img.naturalWidth") == 320
    finally:
        receiver.close()


def test_a_streaming_model_shows_tokens_before_the_end(open_page: Any, stream_server: Server,
                                                       tmp_path: pathlib.Path) -> None:
    gate = tmp_path / "gate"
    page = open_page(stream_server)
    assert page.locator("select.mode").input_value() == "stream"
    page.fill("#in-n", "3")
    page.fill("#in-gate", str(gate))  # token 1 waits for this file
    page.check("#in-metric")  # tokens += 1 before each token
    page.get_by_role("button", name="Run").click()
    page.get_by_test_id("output").get_by_text("tok0").wait_for()
    page.get_by_test_id("logs").get_by_text("log line 0").wait_for()
    page.get_by_test_id("metrics").get_by_text("tokens").wait_for()
    # an intermediate state: token 0 is on the page while the model is held before token 1
    assert status(page).inner_text() == "processing"
    assert "tok1" not in output_text(page)
    assert page.get_by_test_id("metrics").inner_text().split() == ["tokens", "1"]
    gate.write_text("go")
    page.wait_for_selector(".status.succeeded")
    assert [line.strip() for line in output_text(page).splitlines()] == ["tok0", "tok1", "tok2"]
    assert "log line 2" in page.get_by_test_id("logs").inner_text()
    assert "Accept: text/event-stream" in page.get_by_test_id("curl").text_content()


def test_cancel_stops_a_running_prediction(open_page: Any, cancel_server: Server) -> None:
    page = open_page(cancel_server)
    page.fill("#in-sleep", "60")
    page.fill("#in-text", "stop-me")
    page.get_by_role("button", name="Run").click()
    page.wait_for_function("document.querySelector('.ident').textContent !== ''")
    ident = page.locator(".ident").inner_text()  # the id the page gave its PUT
    # until the model is inside run(), past its first line: its slot is taken (BUSY) a
    # moment before, and a cancel then ends the prediction before any of the model's code
    # runs, so there is nothing to clean up (the test used to wait for BUSY only, and
    # failed when the click came that early)
    deadline = time.monotonic() + WAIT_MS / 1000
    while "start stop-me" not in _logs(cancel_server, ident):
        assert time.monotonic() < deadline, "the prediction never started"
        time.sleep(0.05)
    page.get_by_role("button", name="Cancel").click()
    page.wait_for_selector(".status.canceled")
    assert "cleanup stop-me" in page.get_by_test_id("logs").inner_text()
    assert page.get_by_role("button", name="Run").is_enabled()
    assert cancel_server.wait_for("READY")["status"] == "READY"


def _logs(server: Server, ident: str) -> str:
    """The logs of prediction `ident` so far ("" until the server has it)."""
    r = server.client.get(f"/predictions/{ident}")
    return (r.json().get("logs") or "") if r.status_code == 200 else ""


def test_the_page_needs_nothing_but_the_server(open_page: Any, inputs_server: Server) -> None:
    blocked: list[str] = []

    def only_the_server(route: Any) -> None:
        if route.request.url.startswith(inputs_server.url + "/"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page = open_page(inputs_server, route=only_the_server)
    page.fill("#in-text", "offline")
    page.get_by_role("button", name="Run").click()
    page.wait_for_selector(".status.succeeded")
    assert blocked == []
    # the block is live: a request elsewhere is seen, refused, and the page still works
    page.evaluate("""() => { const img = new Image(); img.src = "http://192.0.2.1/probe.png";
                             document.body.append(img); }""")
    deadline = time.monotonic() + WAIT_MS / 1000
    while not blocked and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert blocked == ["http://192.0.2.1/probe.png"]


def test_narrow_screen_and_dark_mode(open_page: Any, inputs_server: Server) -> None:
    page = open_page(inputs_server, viewport={"width": 390, "height": 844},
                     color_scheme="light", path="/playground")
    # nothing wider than the phone: no sideways scrolling, output below the form
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    form_box = page.locator(".input-card").bounding_box()
    output_box = page.locator(".output-card").bounding_box()
    assert output_box["y"] > form_box["y"] + form_box["height"] - 1
    light = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.click("#theme")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    dark = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert light != dark
    page.reload()  # the choice is kept
    page.wait_for_selector("body[data-ready=true]")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == dark


def test_trainings_have_their_own_tab(open_page: Any) -> None:
    with Server("trainings_mixed") as server:
        page = open_page(server)
        page.get_by_role("tab", name="Training").click()
        panel = page.locator(".panel:visible")
        panel.locator("#train-text").fill("weights")
        panel.get_by_role("button", name="Run").click()
        panel.locator(".status.succeeded").wait_for()
        assert "base trained weights" in panel.get_by_test_id("output").inner_text()
        assert "/trainings/" in panel.get_by_test_id("curl").text_content()


def test_tensor_models_get_a_v2_panel(open_page: Any) -> None:
    pytest.importorskip("numpy")
    with Server("v2_echo") as server:
        page = open_page(server)
        page.get_by_role("tab", name="V2 tensors").click()
        panel = page.locator(".panel:visible")
        panel.get_by_label("FP32 data").wait_for()  # built from GET /v2/models/echo-tensors
        metadata = json.loads(panel.locator("pre.json").inner_text())
        assert metadata["name"] == "echo-tensors" and metadata["platform"] == "python_cogserve"
        panel.get_by_label("FP32 data").fill("[1.5, 2.5]")
        panel.get_by_label("FP32 shape").fill("2")
        panel.get_by_role("button", name="Infer").click()
        panel.get_by_test_id("v2-output").get_by_text("FP32:float32:[2]").wait_for()
        assert "[1.5,2.5]" in panel.get_by_test_id("v2-output").inner_text()


def test_async_runs_update_by_polling_and_reopen_from_recent(
        open_page: Any, stream_server: Server, tmp_path: pathlib.Path) -> None:
    gate = tmp_path / "gate"
    page = open_page(stream_server)
    page.select_option("select.mode", "async")
    page.fill("#in-n", "2")
    page.fill("#in-gate", str(gate))
    page.get_by_role("button", name="Run").click()
    # polled while the model is held before token 1: status, logs and output so far
    page.get_by_test_id("output").get_by_text("tok0").wait_for()
    page.get_by_test_id("logs").get_by_text("log line 0").wait_for()
    assert status(page).inner_text() == "processing"
    assert "tok1" not in output_text(page)
    assert "Prefer: respond-async" in page.get_by_test_id("curl").text_content()
    ident = page.locator(".ident").inner_text()
    gate.write_text("go")
    page.wait_for_selector(".status.succeeded")
    assert "tok1" in output_text(page)
    # a new page load knows it from this browser's list, and reads it back with GET
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    assert status(page).inner_text() == "idle"
    page.get_by_test_id("recent").get_by_text(ident).click()
    page.wait_for_selector(".status.succeeded")
    assert page.locator(".ident").inner_text() == ident
    assert "tok0" in output_text(page) and "tok1" in output_text(page)
    assert "log line 1" in page.get_by_test_id("logs").inner_text()


def drop(page: Any, name: str, files: list[tuple[str, str, str]]) -> None:
    """Drop files [(name, text, MIME type)] on input `name`'s drop zone, as a user would."""
    page.evaluate("""([name, files]) => {
        const data = new DataTransfer();
        for (const [file, text, type] of files) data.items.add(new File([text], file, {type}));
        document.querySelector(`[data-field="${name}"] .drop`).dispatchEvent(
            new DragEvent("drop", {dataTransfer: data, bubbles: true, cancelable: true}));
    }""", [name, files])


def sent_types(page: Any) -> list[str]:
    """The Content-Type of each create request the page sends (filled as they go)."""
    types: list[str] = []
    page.on("request", lambda request: types.append(request.headers.get("content-type", ""))
            if request.method == "PUT" else None)
    return types


def test_files_can_be_dropped_and_too_large_ones_are_flagged(open_page: Any,
                                                             inputs_server: Server) -> None:
    page = open_page(inputs_server)  # this server takes request bodies up to 64 KiB
    types = sent_types(page)
    drop(page, "files", [("dropped.txt", "dropped body", "text/plain"),
                         ("big.bin", "x" * 70000, ""), ("mid.bin", "x" * 50000, "")])
    files = field(page, "files")
    big = files.locator(".file", has_text="big.bin")
    mid = files.locator(".file", has_text="mid.bin")
    # sent as a form, a file weighs its size: 70000 bytes are over the limit, 50000 are not
    assert big.locator(".warn").inner_text().startswith(
        "too large: 68 KiB, over this server's request limit of 64 KiB")
    assert mid.locator(".warn").count() == 0
    assert files.locator(".file", has_text="dropped.txt").locator(".warn").count() == 0
    # str | list[str] cannot go in a form: the run needs JSON, where a file is its data
    # URL, a third larger, and 50000 bytes are then over the limit too
    page.fill("#in-either", "plain words")
    mid.locator(".warn", has_text="too large: sent as a data URL").wait_for()
    big.get_by_role("button", name="remove big.bin").click()
    mid.get_by_role("button", name="remove mid.bin").click()
    page.fill("#in-text", "dropped")
    page.get_by_role("button", name="Run").click()
    page.wait_for_selector(".status.succeeded")
    received = json.loads(page.locator(".output pre.json").inner_text())
    assert received["files"]["value"] == ["dropped body"]
    assert received["either"]["value"] == "plain words"
    assert types == ["application/json"]  # the fallback
    curl = page.get_by_test_id("curl").text_content()
    assert "--data-binary" in curl and "data:text/plain;base64," in curl and " -F " not in curl


def test_a_dropped_file_and_plain_inputs_go_as_a_form(open_page: Any,
                                                      inputs_server: Server) -> None:
    page = open_page(inputs_server)
    types = sent_types(page)
    # a picture's thumbnail is an object URL of the File, revoked when the file is replaced
    page.evaluate("""async () => {
        const canvas = document.createElement("canvas");
        canvas.width = 3; canvas.height = 2;
        const png = await new Promise((done) => canvas.toBlob(done, "image/png"));
        const data = new DataTransfer();
        data.items.add(new File([png], "old.png", {type: "image/png"}));
        document.querySelector('[data-field="image"] .drop').dispatchEvent(
            new DragEvent("drop", {dataTransfer: data, bubbles: true, cancelable: true}));
    }""")
    thumb = field(page, "image").locator(".file img")
    src = thumb.get_attribute("src")
    assert src.startswith("blob:")
    assert thumb.evaluate("img => img.decode().then(() => img.naturalWidth)") == 3
    drop(page, "image", [("note.txt", "file body", "text/plain")])  # replaces old.png
    assert field(page, "image").locator(".file-name").all_inner_texts() == ["note.txt"]
    assert field(page, "image").locator(".file img").count() == 0  # not a picture
    loads = """src => new Promise((done) => { const img = new Image();
                img.onload = () => done(true); img.onerror = () => done(false); img.src = src; })"""
    assert page.evaluate(loads, src) is False  # revoked
    drop(page, "files", [("a.txt", "first", "text/plain"), ("b.bin", "second", "")])
    page.fill("#in-text", "hello")
    page.fill("#in-count", "7")
    page.fill("#in-ratio", "0.25")
    page.check("#in-flag")
    page.fill("#in-token", "s3cret")
    page.fill("#in-words", "x\n20")  # a list of strings: "20" stays text
    page.fill("#in-numbers", "1\n2")
    page.fill("#in-extra", '{"k": [1, "2"]}')
    page.fill("#in-maybe", "two\nlines")  # sent as its bytes, not with CRLF
    page.select_option("#in-color", label="blue")
    page.select_option("#in-size", label="3")
    page.get_by_role("button", name="Run").click()
    page.wait_for_selector(".status.succeeded")
    assert len(types) == 1 and types[0].startswith("multipart/form-data; boundary=")
    received = json.loads(page.locator(".output pre.json").inner_text())
    values = {name: entry["value"] for name, entry in received.items()}
    assert values["image"] == {"path": True, "content": "file body"}
    assert values["files"] == ["first", "second"]
    assert values["text"] == "hello" and values["count"] == 7 and values["ratio"] == 0.25
    assert values["flag"] is True
    assert values["token"] == {"secret": "**********", "value": "s3cret"}
    assert values["words"] == ["x", "20"] and values["numbers"] == [1, 2]
    assert values["extra"] == {"k": [1, "2"]}
    assert values["maybe"] == "two\nlines"
    assert values["color"] == "blue" and values["size"] == 3
    curl = page.get_by_test_id("curl").text_content()
    ident = page.locator(".ident").inner_text()
    assert f"-X PUT '{inputs_server.url}/predictions/{ident}'" in curl
    assert "-F 'image=@note.txt;type=text/plain'" in curl
    assert "-F 'files=@a.txt;type=text/plain' \\\n  -F 'files=@b.bin'" in curl
    assert "-F 'count=7'" in curl and "-F 'flag=true'" in curl and "-F 'size=3'" in curl
    assert "--form-string 'extra={\"k\":[1,\"2\"]}'" in curl
    assert "data:" not in curl and "Content-Type" not in curl


def test_the_curl_of_a_form_run_runs(open_page: Any, inputs_server: Server,
                                     tmp_path: pathlib.Path) -> None:
    name = "it's a note; v2.txt"  # a shell quote, and curl's separator in a file name
    page = open_page(inputs_server)
    drop(page, "image", [(name, "curl body", "text/plain")])
    page.fill("#in-text", "curly")
    page.fill("#in-maybe", '@not a file; "quoted"')  # -F would read a file: --form-string
    page.fill("#in-maybe_new", "two\nlines")
    page.fill("#in-words", "<x")  # -F would read x's text
    page.get_by_role("button", name="Run").click()
    page.wait_for_selector(".status.succeeded")
    shown = json.loads(page.locator(".output pre.json").inner_text())
    assert shown["maybe"]["value"] == '@not a file; "quoted"'
    assert shown["words"]["value"] == ["<x"]
    curl = page.get_by_test_id("curl").text_content()
    ident = page.locator(".ident").inner_text()
    assert " -F 'image=@\"it'\\''s a note; v2.txt\";type=text/plain'" in curl
    # pasted into a shell in the file's folder, under a new id (the page's would answer
    # the page's prediction again), it makes the same prediction
    (tmp_path / name).write_text("curl body")
    command = curl.replace(ident, ident + "-curl").replace("curl -s ", "curl -sS --fail-with-body ")
    ran = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60)
    assert ran.returncode == 0, ran.stderr + ran.stdout
    answer = json.loads(ran.stdout)
    assert answer["id"] == ident + "-curl" and answer["status"] == "succeeded"
    assert answer["output"] == shown


def test_a_failed_setup_is_shown_with_its_logs(open_page: Any) -> None:
    with Server("setup_fails", wait="SETUP_FAILED") as server:
        page = open_page(server)
        assert page.locator("#health").inner_text() == "SETUP_FAILED"
        notice = page.locator("#notice")
        assert "setup() failed" in notice.inner_text()
        assert "setup exploded" in notice.locator("pre").inner_text()


def test_outputs_are_rendered_by_type(open_page: Any, inputs_server: Server) -> None:
    """The page's renderer on each kind of output value (its own logic, run in the page)."""
    page = open_page(inputs_server)
    shown = page.evaluate("""async () => {
        const { renderValue } = await import("./docs/outputs.js");
        const doc = {components: {schemas: {}}};
        const file = {type: "string", format: "uri"};
        const cases = {
            image: ["data:image/png;base64,iVBORw0KGgo=", file],
            audio: ["data:audio/wav;base64,UklGRg==", file],
            video: ["http://127.0.0.1:1/out/clip.mp4?sig=1", file],
            other: ["data:application/zip;base64,UEsDBA==", file],
            text: ["line one\\nline two", {type: "string"}],
            concatenated: [["to", "ken", "s"], {type: "array", items: {type: "string"},
                           "x-cog-array-type": "iterator", "x-cog-array-display": "concatenate"}],
            iterator: [["a", "b"], {type: "array", items: {type: "string"},
                                    "x-cog-array-type": "iterator"}],
            gallery: [["data:image/png;base64,AA==", "data:image/png;base64,AB=="],
                      {type: "array", items: file}],
            object: [{score: 0.5, tags: ["x"]}, {type: "object"}],
        };
        const out = {};
        for (const [name, [value, schema]] of Object.entries(cases)) {
            const el = renderValue(value, schema, doc);
            out[name] = {
                media: Array.from(el.querySelectorAll("img, audio, video"), (m) => m.tagName),
                download: Array.from(el.querySelectorAll("a[download]"), (a) => a.download),
                text: el.textContent,
                tag: el.tagName,
            };
        }
        return out;
    }""")
    assert shown["image"]["media"] == ["IMG"]
    assert shown["image"]["download"] == ["output.png"]
    assert shown["audio"]["media"] == ["AUDIO"]
    assert shown["video"]["media"] == ["VIDEO"]
    assert shown["video"]["download"] == ["clip.mp4"]
    assert shown["other"]["media"] == [] and shown["other"]["download"] == ["output.zip"]
    assert shown["text"]["text"] == "line one\nline two"
    assert shown["concatenated"]["text"] == "tokens"
    assert shown["iterator"]["tag"] == "OL" and shown["iterator"]["text"] == "ab"
    assert shown["gallery"]["media"] == ["IMG", "IMG"]
    assert shown["object"]["tag"] == "PRE"
    assert json.loads(shown["object"]["text"]) == {"score": 0.5, "tags": ["x"]}


def test_a_server_with_a_token_asks_for_it_once(open_page: Any) -> None:
    with Server("playground_image", env={"COGSERVE_AUTH_TOKEN": "sekrit"}) as server:
        page = open_page(server, ready=False)  # the page itself is open; the API is not
        auth = page.locator("#auth")
        auth.get_by_label("Token").fill("wrong")
        auth.get_by_role("button", name="Use token").click()
        auth.get_by_text("That token was refused.").wait_for()
        auth.get_by_label("Token").fill("sekrit")
        auth.get_by_role("button", name="Use token").click()
        page.wait_for_selector("body[data-ready=true]")
        assert auth.is_hidden()
        page.get_by_role("button", name="Run").click()
        page.wait_for_selector(".status.succeeded")
        assert page.locator(".output img").evaluate("img => img.naturalWidth") == 320
        curl = page.get_by_test_id("curl").text_content()
        assert '-H "Authorization: Bearer $COGSERVE_AUTH_TOKEN"' in curl
        assert "sekrit" not in curl
        page.locator("#mcp summary").click()  # the MCP config names the token, never holds it
        config = json.loads(page.get_by_test_id("mcp-config").inner_text())
        assert config["mcpServers"]["playground_image"]["headers"] == {
            "Authorization": "Bearer ${COGSERVE_AUTH_TOKEN}"}


def test_the_mcp_endpoint_and_a_client_config_are_shown(open_page: Any,
                                                        image_server: Server) -> None:
    page = open_page(image_server)
    url = f"{image_server.url}/mcp"
    assert page.get_by_test_id("mcp-url").inner_text() == url
    page.locator("#mcp summary").click()
    config = json.loads(page.get_by_test_id("mcp-config").inner_text())
    assert config == {"mcpServers": {"playground_image": {"type": "http", "url": url}}}
    assert page.get_by_role("button", name="Copy config").is_visible()


def test_a_language_model_shows_the_openai_base_url_and_a_snippet_that_runs(
        open_page: Any, image_server: Server) -> None:
    with Server("openai_chat") as server:
        page = open_page(server)
        url = f"{server.url}/v1"
        assert page.get_by_test_id("openai-url").inner_text() == url
        page.locator("#openai summary").click()
        snippet = page.get_by_test_id("openai-snippet").inner_text()
        assert f'base_url="{url}"' in snippet and 'model="openai_chat"' in snippet
        # pasted as it is, it streams the model's answer
        ran = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True,
                             timeout=60, check=True)
        assert ran.stdout == "sys= temp=0.7 Hello "
    # an image model without a text prompt is not served at /v1: no section
    assert open_page(image_server).locator("#openai").count() == 0
