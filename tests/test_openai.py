"""/v1: the OpenAI API of a Cog language model and a Cog image model, driven by the
official `openai` Python SDK against the real server."""

from __future__ import annotations

import base64
import struct
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from harness import Server, wait_until, write_model

TOKEN = "openai-s3cret"


def client(server: Server, api_key: str = "unused") -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=api_key, max_retries=0,
                         timeout=60)


def stored(server: Server, response_id: str) -> dict[str, Any]:
    """The prediction behind an answer (its id is the answer's, after the prefix)."""
    ident = response_id.split("-", 1)[1]
    answer: dict[str, Any] = server.client.get(f"/predictions/{ident}").json()
    return answer


@pytest.fixture(scope="module")
def chat() -> Iterator[Server]:
    with Server("openai_chat") as server:
        yield server


@pytest.fixture(scope="module")
def image() -> Iterator[Server]:
    with Server("openai_image") as server:
        yield server


# ---------------------------------------------------------------- chat

def test_models_lists_the_model(chat):
    models = client(chat).models.list()
    assert [m.id for m in models.data] == ["openai_chat"]
    assert client(chat).models.retrieve("openai_chat").owned_by == "cogserve"


def test_a_chat_completion_maps_messages_and_sampling_fields(chat):
    answer = client(chat).chat.completions.create(
        model="openai_chat", max_tokens=10, temperature=0.5,
        messages=[{"role": "system", "content": "brief"},
                  {"role": "user", "content": "hello there"}])
    choice = answer.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == "sys=brief temp=0.5 hello there "
    assert choice.finish_reason == "stop"
    assert answer.object == "chat.completion" and answer.model == "openai_chat"
    # the model's own metrics: 2 prompt words, 4 tokens out
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens,
            answer.usage.total_tokens) == (2, 4, 6)
    assert answer.usage.model_extra == {"counted": "model"}
    # a prediction like any other: GET /predictions/{id} has it, with the mapped inputs
    prediction = stored(chat, answer.id)
    assert prediction["status"] == "succeeded"
    assert prediction["input"] == {"prompt": "hello there", "system_prompt": "brief",
                                   "max_tokens": 10, "temperature": 0.5}


def test_a_streamed_chat_sends_one_chunk_per_token_then_usage(chat):
    stream = client(chat).chat.completions.create(
        model="openai_chat", stream=True, stream_options={"include_usage": True},
        temperature=1.5, messages=[{"role": "user", "content": "one two three"}])
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    contents = [c.choices[0].delta.content for c in chunks[1:] if c.choices
                and c.choices[0].delta.content]
    assert contents == ["sys= ", "temp=1.5 ", "one ", "two ", "three "]
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert len({c.id for c in chunks}) == 1
    finish = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finish[-1] == "stop" and set(finish[:-1]) == {None}
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 5


def test_max_tokens_reached_is_finish_reason_length(chat):
    answer = client(chat).chat.completions.create(
        model="openai_chat", max_tokens=3,
        messages=[{"role": "user", "content": "a b c d e"}])
    assert answer.choices[0].message.content == "sys= temp=0.7 a "
    assert answer.choices[0].finish_reason == "length"
    stream = client(chat).chat.completions.create(
        model="openai_chat", max_completion_tokens=2, stream=True,
        messages=[{"role": "user", "content": "a b c"}])
    assert [c.choices[0].finish_reason for c in stream][-1] == "length"


def test_a_conversation_becomes_a_transcript_and_stop_the_stop_sequences(chat):
    answer = client(chat).chat.completions.create(
        model="openai_chat", stop=["END", "###"],
        messages=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"},
                  {"role": "user", "content": "bye"}])
    prediction = stored(chat, answer.id)
    assert prediction["input"]["prompt"] == "User: hi\n\nAssistant: yo\n\nUser: bye\n\nAssistant:"
    assert prediction["input"]["stop_sequences"] == "END,###"
    assert answer.choices[0].message.content.endswith("stops=END,### ")


def test_completions_streamed_and_not_and_usage_counted_from_chunks(chat):
    answer = client(chat).completions.create(model="openai_chat", prompt="nometrics x",
                                             max_tokens=50)
    assert answer.object == "text_completion"
    assert answer.choices[0].text == "sys= temp=0.7 nometrics x "
    # no metrics from the model: completion tokens are the chunks it yielded
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (0, 4)
    assert answer.usage.model_extra == {"counted": "chunks"}
    stream = client(chat).completions.create(model="openai_chat", prompt="p q", stream=True,
                                             stream_options={"include_usage": True})
    chunks = list(stream)
    assert "".join(c.choices[0].text for c in chunks if c.choices) == "sys= temp=0.7 p q "
    assert chunks[-1].usage.completion_tokens == 4 and chunks[-1].usage.prompt_tokens == 2


def test_bad_fields_are_400_naming_the_param(chat):
    api = client(chat)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"temperature": 5}, "temperature"),  # the model's own bound (le=2)
        ({"max_tokens": 0}, "max_tokens"),
        ({"n": 2}, "n"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
        ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools"),
    ]
    for extra, param in cases:
        fields = {"model": "openai_chat",
                  "messages": [{"role": "user", "content": "x"}], **extra}
        with pytest.raises(openai.BadRequestError) as caught:
            api.chat.completions.create(**fields)
        assert caught.value.status_code == 400
        assert caught.value.body["param"] == param, (extra, caught.value.body)
        assert caught.value.body["type"] == "invalid_request_error"
        assert caught.value.body["message"]
    # the server keeps serving
    assert api.completions.create(model="openai_chat", prompt="ok").choices[0].text


def test_an_unknown_model_is_404(chat):
    with pytest.raises(openai.NotFoundError) as caught:
        client(chat).chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    assert caught.value.body["code"] == "model_not_found"
    assert caught.value.body["param"] == "model"
    assert "openai_chat" in caught.value.body["message"]
    with pytest.raises(openai.NotFoundError):
        client(chat).images.generate(model="openai_chat", prompt="x")
    raw = httpx.post(chat.url + "/v1/embeddings", json={})
    assert raw.status_code == 404 and raw.json()["error"]["code"] == "unknown_route"
    raw = httpx.post(chat.url + "/v1/chat/completions", content=b"{nope")
    assert raw.status_code == 400 and raw.json()["error"]["type"] == "invalid_request_error"


def test_a_client_leaving_mid_stream_cancels_the_prediction(chat, tmp_path):
    marker = tmp_path / "canceled"
    stream = client(chat).chat.completions.create(
        model="openai_chat", stream=True,
        messages=[{"role": "user", "content": f"slow:{marker}"}])
    ident = None
    for chunk in stream:
        ident = chunk.id
        if chunk.choices and (chunk.choices[0].delta.content or "").startswith("slow"):
            break
    stream.close()
    assert ident is not None
    prediction = wait_until(lambda: (p := stored(chat, ident))["status"] != "processing" and p)
    assert prediction["status"] == "canceled"
    assert marker.read_text() == "canceled"  # the model itself saw the cancel


def test_a_failed_prediction_is_a_500_and_an_error_event_mid_stream(chat):
    with pytest.raises(openai.InternalServerError) as caught:
        client(chat).chat.completions.create(
            model="openai_chat", messages=[{"role": "user", "content": "a fail"}])
    assert caught.value.body["code"] == "prediction_failed"
    assert "the model failed on purpose" in caught.value.body["message"]
    stream = client(chat).chat.completions.create(
        model="openai_chat", stream=True, messages=[{"role": "user", "content": "a fail"}])
    contents = []
    with pytest.raises(openai.APIError, match="the model failed on purpose"):
        for chunk in stream:
            contents.append(chunk.choices[0].delta.content)
    assert contents[1:] == ["sys= ", "temp=0.7 ", "a "]  # what came before the failure


# ---------------------------------------------------------------- images

def png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_images_as_b64_json_with_n_and_size(image):
    answer = client(image).images.generate(model="openai_image", prompt="a red fox", n=2,
                                           size="128x96", response_format="b64_json")
    assert len(answer.data) == 2
    for k, item in enumerate(answer.data):
        data = base64.b64decode(item.b64_json)
        assert png_size(data) == (128, 96)
        assert f"a red fox #{k}".encode() in data


def test_images_as_urls(image):
    answer = client(image).images.generate(model="openai_image", prompt="p")
    assert len(answer.data) == 1
    head, _, payload = answer.data[0].url.partition(",")
    assert head == "data:image/png;base64"
    assert png_size(base64.b64decode(payload)) == (64, 64)
    with pytest.raises(openai.BadRequestError) as caught:
        client(image).images.generate(model="openai_image", prompt="p", size="big")
    assert caught.value.body["param"] == "size"
    with pytest.raises(openai.NotFoundError) as caught:  # not a language model
        client(image).chat.completions.create(
            model="openai_image", messages=[{"role": "user", "content": "x"}])
    assert "images/generations" in caught.value.body["message"]


# ---------------------------------------------------------------- the server's state

def test_a_model_of_neither_shape_answers_404_saying_why():
    with Server("iter_plain") as server:
        with pytest.raises(openai.NotFoundError) as caught:
            client(server).models.list()
        assert caught.value.body["code"] == "model_not_supported"
        assert "no text input named prompt" in caught.value.body["message"]
        # Cog's own routes are as they were
        assert server.predict(n=2).json()["output"] == ["p0", "p1"]


def test_cog_yaml_maps_a_model_the_names_do_not_fit(tmp_path):
    source = ("from cog import BaseRunner\n\n"
              "class Runner(BaseRunner):\n"
              "    def run(self, text: str, length: int = 8) -> str:\n"
              "        return text.upper()[:length]\n")
    model = write_model(tmp_path / "shout", source, 'run: "run.py:Runner"\nopenai:\n'
                        "  shape: language\n  inputs: {prompt: text, max_tokens: length}\n")
    with Server(model) as server:
        answer = client(server).completions.create(model="shout", prompt="hello world",
                                                   max_tokens=5)
        assert answer.choices[0].text == "HELLO"
        assert stored(server, answer.id)["input"] == {"text": "hello world", "length": 5}
        # a str output streams as one chunk, at the end
        stream = client(server).completions.create(model="shout", prompt="abc", stream=True)
        assert [c.choices[0].text for c in stream] == ["ABC", ""]


def test_no_openai_leaves_v1_out(tmp_path):
    with Server("openai_chat", "--no-openai") as server:
        assert httpx.get(server.url + "/v1/models").status_code == 404
        assert server.predict(prompt="x").json()["status"] == "succeeded"


def test_auth_token_and_a_full_server_in_openais_shape(tmp_path):
    with Server("openai_chat", env={"COGSERVE_AUTH_TOKEN": TOKEN}) as server:
        with pytest.raises(openai.AuthenticationError) as caught:
            client(server, "wrong").models.list()
        assert caught.value.body["code"] == "invalid_api_key"
        api = client(server, TOKEN)
        assert [m.id for m in api.models.list().data] == ["openai_chat"]
        # one slot, no queue (Cog's default): a second call while one runs is 429
        marker = tmp_path / "held"
        stream = api.chat.completions.create(
            model="openai_chat", stream=True,
            messages=[{"role": "user", "content": f"slow:{marker}"}])
        next(iter(stream))
        with pytest.raises(openai.RateLimitError) as limited:
            api.chat.completions.create(model="openai_chat",
                                        messages=[{"role": "user", "content": "x"}])
        assert limited.value.response.headers["retry-after"]
        assert limited.value.body["type"] == "rate_limit_error"
        stream.close()
        wait_until(marker.exists)


def test_503_while_the_model_starts(tmp_path):
    gate = tmp_path / "gate"
    with Server("openai_chat", env={"OPENAI_TEST_SETUP_GATE": str(gate)},
                wait="STARTING") as server:
        with pytest.raises(openai.APIStatusError) as caught:
            client(server).chat.completions.create(
                model="openai_chat", messages=[{"role": "user", "content": "x"}])
        assert caught.value.status_code == 503
        assert caught.value.body["code"] == "model_not_ready"
        gate.touch()
        server.wait_for("READY")
        assert client(server).completions.create(model="openai_chat", prompt="x").choices
