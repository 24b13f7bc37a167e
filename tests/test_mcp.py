"""/mcp: the model as MCP tools, driven by the official `mcp` client SDK (its Streamable
HTTP transport) against the real server."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import pathlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import pytest
from filehub import Receiver
from harness import MODELS, Server
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

HELLO = MODELS.parent.parent / "examples" / "hello-world"
TOKEN = "mcp-s3cret"


@contextlib.asynccontextmanager
async def connect(server: Server, headers: dict[str, str] | None = None,
                  statuses: list[int] | None = None) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session with the server's /mcp (`statuses`: each HTTP
    response's status is appended there)."""
    async def record(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    async with httpx2.AsyncClient(headers=headers or {}, timeout=httpx2.Timeout(30, read=120),
                                  event_hooks={"response": [record]}) as http:
        async with streamable_http_client(server.url + "/mcp", http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                yield session


def call(server: Server, name: str, arguments: dict[str, Any], **kwargs: Any) -> Any:
    async def go() -> Any:
        async with connect(server) as session:
            await session.list_tools()  # the client validates results against outputSchema
            return await session.call_tool(name, arguments, **kwargs)
    return asyncio.run(go())


def list_tools(server: Server, headers: dict[str, str] | None = None,
               statuses: list[int] | None = None) -> dict[str, Any]:
    async def go() -> Any:
        async with connect(server, headers, statuses) as session:
            return (await session.list_tools()).tools
    return {tool.name: tool for tool in asyncio.run(go())}


def resolved(node: Any, components: dict[str, Any]) -> Any:
    """The test's own reading of a schema with its refs replaced by their components."""
    if isinstance(node, list):
        return [resolved(n, components) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return resolved(components[node["$ref"].rsplit("/", 1)[1]], components)
    return {k: resolved(v, components) for k, v in node.items()}


@pytest.fixture(scope="module")
def image() -> Iterator[Server]:
    with Server("playground_image") as server:
        yield server


@pytest.fixture(scope="module")
def trainer() -> Iterator[Server]:
    with Server("trainings_sync") as server:
        yield server


# ---------------------------------------------------------------- tools/list

def test_the_tool_is_the_model_with_its_input_schema(image):
    tools = list_tools(image)
    assert list(tools) == ["playground_image"]
    tool = tools["playground_image"]
    components = image.client.get("/openapi.json").json()["components"]["schemas"]
    # the Input schema, with its choices' $ref replaced by the enum it names
    assert tool.input_schema == resolved(components["Input"], components)
    assert "$ref" not in str(tool.input_schema)
    assert tool.input_schema["properties"]["color"]["allOf"][0]["enum"] == \
        ["violet", "teal", "orange"]
    # a file output is not an object: wrapped under "output"
    assert tool.output_schema == {"type": "object",
                                  "properties": {"output": components["Output"]}}
    assert tool.description == "Run a prediction with the model playground_image."


def test_a_model_with_a_trainer_has_a_training_tool(trainer):
    tools = list_tools(trainer)
    assert set(tools) == {"trainings_sync", "trainings_sync-train"}
    components = trainer.client.get("/openapi.json").json()["components"]["schemas"]
    train = tools["trainings_sync-train"]
    assert train.input_schema == resolved(components["TrainingInput"], components)
    assert train.description == "A plain function trainer: no setup()."
    result = call(trainer, "trainings_sync-train", {"text": "w", "steps": 3})
    http = trainer.client.post("/trainings", json={"input": {"text": "w", "steps": 3}}).json()
    assert not result.is_error
    assert result.structured_content == {"output": http["output"]} == {"output": "trained w x3"}
    assert call(trainer, "trainings_sync", {"text": "q"}).structured_content == \
        {"output": "predicted q"}


# ---------------------------------------------------------------- tools/call

def test_a_call_gives_the_http_predictions_output_and_the_image(image):
    arguments = {"width": 8, "height": 4, "color": "teal"}
    result = call(image, "playground_image", arguments)
    http = image.predict(**arguments).json()
    assert not result.is_error
    assert result.structured_content == {"output": http["output"]}
    media, _, payload = http["output"].partition(",")
    assert media == "data:image/png;base64"
    blocks = {block.type: block for block in result.content}
    assert blocks["image"].mime_type == "image/png" and blocks["image"].data == payload
    assert base64.b64decode(payload).startswith(b"\x89PNG")
    # the prediction is Cog's too: GET /predictions/{id} has it, logs included
    ident = result.meta["cogserve/prediction"]["id"]
    stored = image.client.get(f"/predictions/{ident}").json()
    assert stored["status"] == "succeeded" and stored["output"] == http["output"]
    assert stored["logs"] == "drawing 8x4 teal\n"


def test_invalid_input_is_a_tool_error_naming_the_field(image):
    result = call(image, "playground_image", {"width": 999})
    assert result.is_error
    assert result.content[0].text == 'invalid input "width": number must be at most 512'
    result = call(image, "playground_image", {"colour": "teal"})
    assert result.is_error
    assert result.content[0].text.startswith('unknown input "colour"; valid inputs are: color')
    assert image.health()["status"] == "READY"  # nothing reached the model


def test_a_file_output_is_a_resource_link():
    with Server("files_out") as server:
        result = call(server, "files_out", {"size": 3, "name": "notes.txt"})
        http = server.predict(size=3, name="notes.txt").json()
    assert not result.is_error
    links = [block for block in result.content if block.type == "resource_link"]
    assert len(links) == 1
    assert links[0].uri == http["output"] == result.structured_content["output"]
    assert links[0].uri == "data:text/plain;base64," + base64.b64encode(b"012").decode()
    assert links[0].mime_type == "text/plain"


def test_an_uploaded_file_output_is_a_resource_link_to_its_url():
    uploads = Receiver()
    try:
        with Server("files_out", "--upload-url", f"{uploads.url}/bucket") as server:
            result = call(server, "files_out", {"size": 3, "name": "notes.txt"})
    finally:
        uploads.close()
    assert not result.is_error
    url = f"{uploads.url}/stored/notes.txt"
    assert result.structured_content == {"output": url}
    (link,) = [block for block in result.content if block.type == "resource_link"]
    assert (link.uri, link.name, link.mime_type) == (url, "notes.txt", "text/plain")
    assert [u.name for u in uploads.uploads] == ["notes.txt"]


def test_a_cancelled_call_cancels_the_prediction(tmp_path):
    record = tmp_path / "record"
    with Server("cancel_record") as server:
        tools = list_tools(server)
        assert tools["cancel_record"].description == (
            "Waits, and writes down a cancel when one reaches it.\n\n"
            'Sleeps `sleep` seconds; on a cancel writes "canceled" to the file `record`.')

        async def go() -> None:
            started = asyncio.Event()

            async def progress(value: float, total: float | None, message: str | None) -> None:
                if message == "started":
                    started.set()

            async with connect(server) as session:
                calling = asyncio.ensure_future(session.call_tool(
                    "cancel_record", {"record": str(record), "sleep": 60},
                    progress_callback=progress))
                await asyncio.wait_for(started.wait(), 30)
                calling.cancel()  # the SDK sends notifications/cancelled
                with pytest.raises(asyncio.CancelledError):
                    await calling
                # the session goes on: a second call runs once the slot is free
                for _ in range(300):
                    again = await session.call_tool(
                        "cancel_record", {"record": str(record), "sleep": 0})
                    if not again.is_error:
                        break
                    await asyncio.sleep(0.05)  # 409: the cancelled run() still ends
                assert again.structured_content == {"output": "slept"}

        asyncio.run(go())
        assert record.read_text() == "canceled"  # written by run() when the cancel came
        metrics = server.client.get("/metrics").text
        assert 'cogserve_predictions_total{kind="prediction",outcome="canceled"} 1.0' in metrics


def test_a_call_has_the_deadline_of_its_x_prediction_timeout_header(tmp_path):
    record = tmp_path / "record"
    with Server("cancel_record") as server:
        async def go() -> Any:
            async with connect(server, {"X-Prediction-Timeout": "0.5"}) as session:
                return await session.call_tool("cancel_record",
                                               {"record": str(record), "sleep": 60})
        result = asyncio.run(go())
    assert result.is_error
    assert result.content[0].text == \
        "prediction failed: prediction exceeded its deadline of 0.5 seconds"
    assert result.meta["cogserve/prediction"]["status"] == "failed"
    assert record.read_text() == "canceled"  # the deadline cancelled run()


def test_a_streaming_model_reports_tokens_and_logs_as_progress():
    with Server("stream") as server:
        messages: list[str] = []
        values: list[float] = []

        async def progress(value: float, total: float | None, message: str | None) -> None:
            values.append(value)
            messages.append(message or "")

        result = call(server, "stream", {"n": 3}, progress_callback=progress)
    assert result.structured_content == {"output": ["tok0", "tok1", "tok2"]}
    assert [m for m in messages if m.startswith("tok")] == ["tok0", "tok1", "tok2"]
    assert {"log line 0", "to stderr", "log line 1", "log line 2"} <= set(messages)
    assert values == sorted(values) and len(set(values)) == len(values)  # increasing


# ---------------------------------------------------------------- access and switches

def test_the_bearer_token_is_required_and_accepted():
    with Server(HELLO, env={"COGSERVE_AUTH_TOKEN": TOKEN}) as server:
        bare = server.client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                  headers={"Accept": "application/json, text/event-stream"})
        assert bare.status_code == 401 and bare.headers["www-authenticate"].startswith("Bearer")
        statuses: list[int] = []
        with pytest.raises(Exception, match="unhandled errors"):  # the SDK's ExceptionGroup
            list_tools(server, {"Authorization": "Bearer wrong"}, statuses)
        assert statuses == [401]  # its initialize was refused; nothing else was sent
        statuses.clear()
        tools = list_tools(server, {"Authorization": f"Bearer {TOKEN}"}, statuses)
        assert list(tools) == ["hello-world"] and 401 not in statuses

        async def go() -> Any:
            async with connect(server, {"Authorization": f"Bearer {TOKEN}"}) as session:
                return await session.call_tool("hello-world", {"name": "Ada", "times": 2})
        assert asyncio.run(go()).structured_content == {"output": "hello Ada hello Ada"}


def test_no_mcp_removes_the_route():
    with Server(HELLO, "--no-mcp") as server:
        r = server.client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert r.status_code == 404
        assert server.predict(name="x").json()["output"] == "hello x"


def test_without_the_extra_mcp_says_how_to_get_it(tmp_path):
    hide = tmp_path / "hide-mcp"
    hide.mkdir()
    # as if `mcp` were not installed: find_spec("mcp") answers None for a None module
    (hide / "sitecustomize.py").write_text("import sys\nsys.modules['mcp'] = None\n")
    path = os.pathsep.join(filter(None, [str(hide), os.environ.get("PYTHONPATH")]))
    with Server(HELLO, env={"PYTHONPATH": path}) as server:
        r = server.client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert r.status_code == 501
        assert "pip install 'cogserve[mcp]'" in r.json()["error"]
        assert server.predict(name="x").json()["output"] == "hello x"


def test_the_model_never_loads_the_sdk_for_other_routes():
    """Nothing of the SDK is imported until a request reaches /mcp."""
    with Server(HELLO) as server:
        assert server.predict(name="x").status_code == 200
        maps = pathlib.Path(f"/proc/{server.pid}/maps").read_text()
        assert "pydantic_core" not in maps  # the SDK's first native module
        list_tools(server)
        assert "pydantic_core" in pathlib.Path(f"/proc/{server.pid}/maps").read_text()
