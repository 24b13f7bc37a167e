"""An OpenAI request body as the model's inputs (the README's tables say the same).

Each function takes the decoded body and the `Model` (shapes.py) and returns a `Call`:
the inputs for the prediction and what the answer needs to know. Fields the model has
no input for are ignored (clients send their defaults); fields no Cog model could honour
(`tools`, `logprobs`, several choices) are refused with 400 naming them. The values
themselves are checked by the model's own input validator afterwards, whose errors
name the request's field again (`param_of`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import orjson

from cogserve.openai_api.errors import bad
from cogserve.openai_api.shapes import Field, Model

# request field -> the field of shapes.NAMES it fills (both spellings of max tokens)
SAMPLING: tuple[tuple[str, Field], ...] = (
    ("max_tokens", Field.MAX_TOKENS), ("max_completion_tokens", Field.MAX_TOKENS),
    ("temperature", Field.TEMPERATURE), ("top_p", Field.TOP_P), ("top_k", Field.TOP_K),
    ("seed", Field.SEED), ("presence_penalty", Field.PRESENCE_PENALTY),
    ("frequency_penalty", Field.FREQUENCY_PENALTY),
)
REFUSED_TRUE = ("logprobs", "echo")  # refused when true: a Cog model gives neither
SIZES_SEPARATOR = "x"


@dataclass
class Call:
    """A request read: the model's inputs and how to answer."""

    inputs: dict[str, Any]
    params: dict[str, str] = field(default_factory=dict)  # model input -> request field
    stream: bool = False
    include_usage: bool = False
    max_tokens: int | None = None
    response_format: str = "url"  # images: url | b64_json

    def put(self, model: Model, name: Field, value: Any, param: str) -> None:
        """Set the model's input for `name` (nothing when it has none)."""
        target = model.input(name)
        if target is not None:
            self.inputs[target] = value
            self.params[target] = param

    def param_of(self, input_name: str) -> str:
        """The request field a model input came from (the input's name if none)."""
        return self.params.get(input_name.split("/", 1)[0], input_name)


def chat(model: Model, body: dict[str, Any]) -> Call:
    """`POST /v1/chat/completions`: `messages` become the prompt (`messages_to_inputs`)."""
    call = _common(model, body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad("messages", "messages must be a non-empty array of {role, content} objects")
    turns = [_turn(i, m) for i, m in enumerate(messages)]
    _messages(model, call, turns, messages)
    return call


def completion(model: Model, body: dict[str, Any]) -> Call:
    """`POST /v1/completions`: `prompt` is the model's prompt as it is."""
    call = _common(model, body)
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise bad("prompt", "prompt must be a string (one prompt per request)")
    if body.get("suffix"):
        raise bad("suffix", "suffix is not supported: the model completes a prompt only")
    if model.input(Field.PROMPT) is None:
        raise bad("prompt", f"the model {model.name} takes messages, not a prompt: use "
                            "POST /v1/chat/completions")
    call.put(model, Field.PROMPT, prompt, "prompt")
    return call


def image(model: Model, body: dict[str, Any]) -> Call:
    """`POST /v1/images/generations`: prompt, n, size, response_format."""
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt:
        raise bad("prompt", "prompt must be a non-empty string")
    call = Call({})
    call.put(model, Field.PROMPT, prompt, "prompt")
    _flag(body, "stream", "streaming images is not supported")
    n = body.get("n")
    if n is not None:
        if not _is_int(n) or n < 1:
            raise bad("n", f"n must be a positive integer, not {n!r}")
        if model.input(Field.N) is None and n != 1:
            raise bad("n", f"the model {model.name} makes one image per request (it has no "
                           "num_outputs input): n must be 1")
        call.put(model, Field.N, n, "n")
    size = body.get("size")
    if size is not None and size != "auto":
        _size(model, call, size)
    fmt = body.get("response_format") or "url"
    if fmt not in ("url", "b64_json"):
        raise bad("response_format", f"response_format must be url or b64_json, not {fmt!r}")
    call.response_format = fmt
    if body.get("seed") is not None:
        call.put(model, Field.SEED, body["seed"], "seed")
    return call


# ---------------------------------------------------------------- the parts

def _common(model: Model, body: dict[str, Any]) -> Call:
    call = Call({})
    call.stream = _flag(body, "stream")
    options = body.get("stream_options")
    if options is not None:
        if not isinstance(options, dict):
            raise bad("stream_options", "stream_options must be an object")
        call.include_usage = options.get("include_usage") is True
    n = body.get("n")
    if n is not None and n != 1:
        raise bad("n", "n must be 1: the model answers one choice per request")
    for name in REFUSED_TRUE:
        if body.get(name):
            raise bad(name, f"{name} is not supported by Cog models")
    if body.get("tools"):
        raise bad("tools", "tools (function calling) are not supported by this model")
    for key, target in SAMPLING:
        value = body.get(key)
        if value is None:
            continue
        if not isinstance(value, int | float) or isinstance(value, bool) \
                or not math.isfinite(value):
            raise bad(key, f"{key} must be a number, not {value!r}")
        if target is Field.MAX_TOKENS:
            if not _is_int(value) or value < 1:
                raise bad(key, f"{key} must be a positive integer, not {value!r}")
            call.max_tokens = int(value)
        call.put(model, target, value, key)
    stop = body.get("stop")
    if stop is not None:
        stops = [stop] if isinstance(stop, str) else stop
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            raise bad("stop", "stop must be a string or an array of strings")
        if stops:
            call.put(model, Field.STOP, stops if model.is_array(Field.STOP) else ",".join(stops),
                     "stop")
    return call


def _flag(body: dict[str, Any], name: str, refused: str | None = None) -> bool:
    value = body.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise bad(name, f"{name} must be true or false, not {value!r}")
    if value and refused is not None:
        raise bad(name, refused)
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) or \
        isinstance(value, float) and value.is_integer()


def _turn(index: int, message: Any) -> tuple[str, str]:
    """(role, text) of one message; content parts other than text are refused."""
    param = f"messages[{index}]"
    if not isinstance(message, dict):
        raise bad(param, f"{param} must be an object with role and content")
    role = message.get("role")
    if role not in ("system", "developer", "user", "assistant", "tool"):
        raise bad(f"{param}.role", f"{param}.role must be system, developer, user or "
                                   f"assistant, not {role!r}")
    content = message.get("content")
    if content is None:  # an assistant's turn may have none (it called tools); no other
        if role != "assistant":
            raise bad(f"{param}.content", f"Missing required parameter: '{param}.content'.")
        return str(role), ""
    if isinstance(content, str):
        return str(role), content
    if not isinstance(content, list):
        raise bad(f"{param}.content", f"{param}.content must be a string or an array of "
                                      "text parts")
    texts = []
    for j, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") != "text" \
                or not isinstance(part.get("text"), str):
            raise bad(f"{param}.content[{j}]", f"{param}.content[{j}]: only text parts are "
                                               "supported by this model")
        texts.append(part["text"])
    return str(role), "".join(texts)


ROLE_NAMES = {"system": "System", "developer": "System", "user": "User",
              "assistant": "Assistant", "tool": "Tool"}


def _messages(model: Model, call: Call, turns: list[tuple[str, str]],
              raw: list[Any]) -> None:
    """The messages as the model's inputs.

    - The model has a `messages` input: they go there as they came (a JSON string if
      the input is a string).
    - Else the system messages go to its `system_prompt` input when it has one, and
      one user message left is the prompt as it is (the model's own `prompt_template`,
      if it has one, then applies);
    - else the conversation is written as a plain transcript, `Role: text` paragraphs
      ending with `Assistant:`.
    """
    if model.input(Field.MESSAGES) is not None:
        plain = [{"role": role, "content": text} for role, text in turns]
        call.put(model, Field.MESSAGES,
                 plain if model.is_array(Field.MESSAGES) else orjson.dumps(plain).decode(),
                 "messages")
        return
    if model.input(Field.SYSTEM_PROMPT) is not None:
        system = [text for role, text in turns if role in ("system", "developer")]
        if system:
            call.put(model, Field.SYSTEM_PROMPT, "\n\n".join(system), "messages")
        turns = [(role, text) for role, text in turns if role not in ("system", "developer")]
    if not turns:
        raise bad("messages", "messages must hold at least one user message")
    if len(turns) == 1 and turns[0][0] == "user":
        prompt = turns[0][1]
    else:
        prompt = "\n\n".join(f"{ROLE_NAMES[role]}: {text}" for role, text in turns) + \
            "\n\nAssistant:"
    call.put(model, Field.PROMPT, prompt, "messages")


def _size(model: Model, call: Call, size: Any) -> None:
    """`WIDTHxHEIGHT` as the model's width and height, else its aspect_ratio."""
    width, sep, height = str(size).partition(SIZES_SEPARATOR)
    if not sep or not width.isdigit() or not height.isdigit() or not int(width) \
            or not int(height):
        raise bad("size", f"size must be WIDTHxHEIGHT (e.g. 1024x1024), not {size!r}")
    w, h = int(width), int(height)
    if model.input(Field.WIDTH) is not None and model.input(Field.HEIGHT) is not None:
        call.put(model, Field.WIDTH, w, "size")
        call.put(model, Field.HEIGHT, h, "size")
        return
    if model.input(Field.ASPECT_RATIO) is None:
        raise bad("size", f"the model {model.name} has no width/height or aspect_ratio "
                          "input: leave size out")
    ratio = f"{w // math.gcd(w, h)}:{h // math.gcd(w, h)}"
    choices = model.choices(Field.ASPECT_RATIO)
    if choices is not None and ratio not in choices:
        raise bad("size", f"size {size} is the aspect ratio {ratio}; the model takes "
                          f"{', '.join(map(str, choices))}")
    call.put(model, Field.ASPECT_RATIO, ratio, "size")
