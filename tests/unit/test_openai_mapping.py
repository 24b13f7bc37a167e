"""The OpenAI front end's rules, in-process: shapes from schemas, the cog.yaml override,
requests to inputs, usage and finish_reason, and the stream's frames."""

from __future__ import annotations

import base64
import os
import pathlib
import subprocess
import sys
from typing import Any

import orjson
import pytest

from cogserve.openai_api import answers, mapping
from cogserve.openai_api.errors import APIError, from_refusal
from cogserve.openai_api.shapes import Field, OverrideError, Shape, read
from cogserve.runtime.errors import AtCapacity, NotReady, QueueFull

TEXT_ITERATOR = {"type": "array", "items": {"type": "string"},
                 "x-cog-array-type": "iterator", "x-cog-array-display": "concatenate"}
FILE = {"type": "string", "format": "uri"}
MODELS = pathlib.Path(__file__).parent.parent / "models"


def document(properties: dict[str, Any], output: dict[str, Any]) -> dict[str, Any]:
    return {"components": {"schemas": {
        "Input": {"type": "object", "properties": properties},
        "ratio": {"title": "ratio", "enum": ["1:1", "16:9"], "type": "string"},
        "Output": output}}}


def text(**extra: Any) -> dict[str, Any]:
    return {"type": "string", **extra}


def llama(**more: Any) -> Any:
    """Replicate's hosted language models' spellings."""
    return read(document({"prompt": text(), "system_prompt": text(),
                          "max_new_tokens": {"type": "integer"},
                          "stop_sequences": text(), "top_k": {"type": "integer"},
                          "prompt_template": text(), **more}, TEXT_ITERATOR), "llama")


def test_shapes_from_the_schema():
    assert llama().shape is Shape.LANGUAGE
    assert read(document({"prompt": text()}, text()), "m").shape is Shape.LANGUAGE
    assert read(document({"prompt": text()}, FILE), "m").shape is Shape.IMAGE
    assert read(document({"prompt": text()}, {"type": "array", "items": FILE}),
                "m").shape is Shape.IMAGE
    none = read(document({"n": {"type": "integer"}}, text()), "m")
    assert none.shape is Shape.NONE and "no text input named prompt" in none.why
    none = read(document({"prompt": text()}, {"type": "integer"}), "m")
    assert none.shape is Shape.NONE and "neither text" in none.why
    assert read({"components": {"schemas": {"TrainingInput": {}}}}, "m").shape is Shape.NONE


def test_the_first_published_spelling_wins():
    model = llama(max_length={"type": "integer"})
    assert model.input(Field.MAX_TOKENS) == "max_new_tokens"
    assert model.input(Field.STOP) == "stop_sequences"
    assert model.input(Field.TEMPERATURE) is None


def test_cog_yaml_names_inputs_and_can_turn_it_off():
    schema = document({"text": text(), "length": {"type": "integer"}}, TEXT_ITERATOR)
    assert read(schema, "m").shape is Shape.NONE
    model = read(schema, "m", {"shape": "language",
                               "inputs": {"prompt": "text", "max_tokens": "length"}})
    assert model.shape is Shape.LANGUAGE and model.input(Field.MAX_TOKENS) == "length"
    assert read(document({"prompt": text()}, text()), "m", {"shape": "none"}).shape \
        is Shape.NONE
    for bad, words in [({"inputs": {"prompt": "nope"}}, "no input 'nope'"),
                       ({"shape": "video"}, "must be one of"),
                       ({"inputs": {"bogus": "text"}}, "unknown field 'bogus'"),
                       ({"colour": 1}, "unknown key 'colour'"), ("yes", "a mapping")]:
        with pytest.raises(OverrideError, match=words):
            read(schema, "m", bad)


def test_chat_messages_to_the_prompt():
    model = llama()
    call = mapping.chat(model, {"messages": [
        {"role": "system", "content": "be kind"},
        {"role": "user", "content": [{"type": "text", "text": "hi "}, {"type": "text",
                                                                      "text": "you"}]}],
        "max_tokens": 7, "stop": "##", "top_k": 3, "temperature": 0.2})
    # no temperature input: ignored; max_tokens under the model's own name
    assert call.inputs == {"prompt": "hi you", "system_prompt": "be kind",
                           "max_new_tokens": 7, "stop_sequences": "##", "top_k": 3}
    assert call.param_of("max_new_tokens") == "max_tokens" and call.max_tokens == 7
    # without a system_prompt input the system message joins the transcript
    bare = read(document({"prompt": text()}, text()), "m")
    call = mapping.chat(bare, {"messages": [{"role": "system", "content": "s"},
                                             {"role": "user", "content": "u"}]})
    assert call.inputs == {"prompt": "System: s\n\nUser: u\n\nAssistant:"}
    # an assistant's turn without content (it called tools) is an empty turn
    call = mapping.chat(bare, {"messages": [{"role": "user", "content": "u"},
                                             {"role": "assistant", "content": None},
                                             {"role": "user", "content": "v"}]})
    assert call.inputs == {"prompt": "User: u\n\nAssistant: \n\nUser: v\n\nAssistant:"}
    # a messages input takes them as they came (a JSON string for a str input)
    chatty = read(document({"messages": text()}, text()), "m")
    call = mapping.chat(chatty, {"messages": [{"role": "user", "content": "x"}]})
    assert orjson.loads(call.inputs["messages"]) == [{"role": "user", "content": "x"}]
    listy = read(document({"messages": {"type": "array", "items": {}},
                           "stop": {"type": "array", "items": text()}}, text()), "m")
    call = mapping.chat(listy, {"messages": [{"role": "user", "content": "x"}],
                                 "stop": ["a", "b"]})
    assert call.inputs["messages"] == [{"role": "user", "content": "x"}]
    assert call.inputs["stop"] == ["a", "b"]


@pytest.mark.parametrize(("body", "param"), [
    ({"messages": "hi"}, "messages"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
     "messages[0].content[0]"),
    ({"messages": [{"role": "system", "content": "only"}]}, "messages"),
    ({"messages": [{"role": "user"}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": None}]},
     "messages[1].content"),
    ({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}, "temperature"),
    ({"messages": [{"role": "user", "content": "x"}], "stream": "yes"}, "stream"),
    ({"messages": [{"role": "user", "content": "x"}], "stop": [1]}, "stop"),
    ({"messages": [{"role": "user", "content": "x"}], "logprobs": True}, "logprobs"),
])
def test_chat_refusals_name_the_field(body, param):
    with pytest.raises(APIError) as caught:
        mapping.chat(llama(), body)
    assert caught.value.status == 400 and caught.value.param == param


def test_images_n_size_and_aspect_ratio():
    sized = read(document({"prompt": text(), "num_outputs": {"type": "integer"},
                           "width": {"type": "integer"}, "height": {"type": "integer"}},
                          {"type": "array", "items": FILE}), "m")
    call = mapping.image(sized, {"prompt": "p", "n": 3, "size": "512x256",
                                  "response_format": "b64_json"})
    assert call.inputs == {"prompt": "p", "num_outputs": 3, "width": 512, "height": 256}
    assert call.response_format == "b64_json"
    ratio = read(document({"prompt": text(), "aspect_ratio": {
        "allOf": [{"$ref": "#/components/schemas/ratio"}]}}, FILE), "m")
    assert mapping.image(ratio, {"prompt": "p", "size": "1920x1080"}).inputs == \
        {"prompt": "p", "aspect_ratio": "16:9"}
    for body, param in [({"size": "4x3"}, "size"), ({"n": 2}, "n"),
                        ({"response_format": "png"}, "response_format"),
                        ({"size": "wide"}, "size")]:
        with pytest.raises(APIError) as caught:
            mapping.image(ratio, {"prompt": "p", **body})
        assert caught.value.param == param


def test_usage_and_finish_reason():
    assert answers.usage({"input_token_count": 3, "output_token_count": 5}, 9) == \
        {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8, "counted": "model"}
    assert answers.usage({}, 9) == {"prompt_tokens": 0, "completion_tokens": 9,
                                    "total_tokens": 9, "counted": "chunks"}
    assert answers.finish_reason({}, 4, 4) == "length"
    assert answers.finish_reason({}, 3, 4) == "stop"
    assert answers.finish_reason({"finish_reason": "length"}, 1, None) == "length"


def test_stream_frames_are_openais_json():
    chunks = answers.Chunks(answers.Kind.CHAT, "abc", "m", 7)
    token = chunks.token('say "hi"\n')
    assert token.startswith(b"data: ") and token.endswith(b"\n\n")
    assert orjson.loads(token[6:]) == {
        "id": "chatcmpl-abc", "object": "chat.completion.chunk", "created": 7, "model": "m",
        "choices": [{"index": 0, "delta": {"content": 'say "hi"\n'}, "logprobs": None,
                     "finish_reason": None}]}
    assert chunks.tokens(["a", "b", "c"]) == b"".join(chunks.token(t) for t in "abc")
    assert chunks.tokens(["a"]) == chunks.token("a")
    frames = chunks.last("stop", {"prompt_tokens": 1}).split(b"\n\n")
    assert orjson.loads(frames[0][6:])["choices"][0]["finish_reason"] == "stop"
    assert orjson.loads(frames[1][6:])["usage"] == {"prompt_tokens": 1}
    assert frames[2] == b"data: [DONE]"
    text = answers.Chunks(answers.Kind.TEXT, "abc", "m", 7)
    assert orjson.loads(text.token("x")[6:])["choices"][0]["text"] == "x"
    assert text.first() == b""


def test_images_b64_from_data_urls():
    payload = base64.b64encode(b"\x89PNG").decode()
    assert answers.images([f"data:image/png;base64,{payload}"], "b64_json", 1)["data"] == \
        [{"b64_json": payload}]
    assert answers.images("data:text/plain,a%20b", "b64_json", 1)["data"] == \
        [{"b64_json": base64.b64encode(b"a b").decode()}]
    with pytest.raises(APIError):
        answers.images(["https://bucket/x.png"], "b64_json", 1)


def test_refusals_in_openais_statuses():
    full = from_refusal(QueueFull(4, 7))
    assert (full.status, full.headers) == (429, [(b"retry-after", b"7")])
    assert from_refusal(AtCapacity()).status == 429
    assert from_refusal(NotReady("starting", None)).status == 503


def test_an_app_imports_none_of_the_routes_until_v1_is_asked(tmp_path):
    """Nothing but the small mount is loaded by a server nobody asks for /v1 (in a fresh
    interpreter: other tests here import the modules)."""
    code = (
        "import asyncio, sys\n"
        "from cogserve.assembly import build\n"
        "from cogserve.model.config import load_config\n"
        "from cogserve.runtime.settings import for_model\n"
        f"cfg = load_config({str(MODELS / 'openai_chat')!r})\n"
        "async def main():\n"
        "    build(cfg, for_model(cfg))\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules\n"
        "             if m.startswith(('cogserve.openai_api', 'openai'))))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "COGSERVE_STORE": "memory",
                                             "TMPDIR": str(tmp_path)},
                          timeout=60, check=True)
    assert done.stdout.strip() == "['cogserve.openai_api']"


def test_v1_paths_have_route_templates():
    from cogserve.openai_api import OpenAIMount

    mount = OpenAIMount(None, 1)  # type: ignore[arg-type]  # `match` reads no service
    assert mount.match("/v1/chat/completions").template == "/v1/chat/completions"
    assert mount.match("/v1/models/").template == "/v1/models"
    assert mount.match("/v1/models/some-model").template == "/v1/models/{model}"
    assert mount.match("/v1/embeddings").template == "/v1"
    assert mount.match("/v1/images/generations").app is mount
