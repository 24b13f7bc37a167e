"""OpenAI's response documents, built from a prediction: `chat.completion`,
`text_completion`, their streamed chunks, `usage`, and the images' `data`.

`usage` comes from the model's own `input_token_count`/`output_token_count` metrics
(Cog's convention, recorded with `self.scope.record_metric(...)`) when it records them;
otherwise `completion_tokens` is the number of chunks the model yielded and
`prompt_tokens` is 0, and `usage.counted` says which (`"model"` or `"chunks"`).
`finish_reason` is the model's own `finish_reason` metric when it records one, else
`length` when the completion reached the request's max_tokens, else `stop`.
"""

from __future__ import annotations

import base64
import time
from enum import StrEnum
from typing import Any
from urllib.parse import unquote_to_bytes

import orjson

from cogserve.openai_api.errors import bad

IN_METRIC = "input_token_count"
OUT_METRIC = "output_token_count"
FINISH_METRIC = "finish_reason"


class Kind(StrEnum):
    """The two text routes, by the `object` their answers carry."""

    CHAT = "chat.completion"
    TEXT = "text_completion"


PREFIX = {Kind.CHAT: "chatcmpl-", Kind.TEXT: "cmpl-"}


def text_of(output: Any) -> tuple[str, int]:
    """A language model's output as one text, and the number of chunks it came in."""
    if output is None:
        return "", 0
    if isinstance(output, list):
        return "".join(str(part) for part in output), len(output)
    return str(output), 1


def usage(metrics: dict[str, Any], chunks: int) -> dict[str, Any]:
    prompt, completion = metrics.get(IN_METRIC), metrics.get(OUT_METRIC)
    counted = "model"
    if not isinstance(completion, int):
        completion, counted = chunks, "chunks"
    if not isinstance(prompt, int):
        prompt = 0
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion, "counted": counted}


def finish_reason(metrics: dict[str, Any], tokens: int, max_tokens: int | None) -> str:
    said = metrics.get(FINISH_METRIC)
    if said in ("stop", "length"):
        return str(said)
    return "length" if max_tokens is not None and tokens >= max_tokens else "stop"


def completion(kind: Kind, prediction_id: str, model: str, created: int, text: str,
               finish: str, used: dict[str, Any]) -> dict[str, Any]:
    """The whole answer of a request without `stream`."""
    choice: dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": finish}
    if kind is Kind.CHAT:
        choice["message"] = {"role": "assistant", "content": text, "refusal": None}
    else:
        choice["text"] = text
    return {"id": PREFIX[kind] + prediction_id, "object": kind.value, "created": created,
            "model": model, "choices": [choice], "usage": used}


class Chunks:
    """The `data:` frames of one streamed answer. A token's frame is two constant byte
    strings around the token's JSON, so each yielded token costs one small encode, and
    the tokens queued together are one join."""

    def __init__(self, kind: Kind, prediction_id: str, model: str, created: int) -> None:
        self.kind = kind
        obj = "chat.completion.chunk" if kind is Kind.CHAT else "text_completion"
        self.envelope = {"id": PREFIX[kind] + prediction_id, "object": obj,
                         "created": created, "model": model}
        head = orjson.dumps(self.envelope)[:-1]
        if kind is Kind.CHAT:
            self.head = b"data: " + head + b',"choices":[{"index":0,"delta":{"content":'
            self.tail = b'},"logprobs":null,"finish_reason":null}]}\n\n'
        else:
            self.head = b"data: " + head + b',"choices":[{"index":0,"text":'
            self.tail = b',"logprobs":null,"finish_reason":null}]}\n\n'
        self.between = self.tail + self.head

    def token(self, text: str) -> bytes:
        return self.head + orjson.dumps(text) + self.tail

    def tokens(self, texts: list[str]) -> bytes:
        """The frames of several tokens: one join (the tail and head between two tokens
        are one constant)."""
        if len(texts) == 1:
            return self.token(texts[0])
        return self.head + self.between.join([orjson.dumps(t) for t in texts]) + self.tail

    def first(self) -> bytes:
        """Chat's opening chunk: the assistant's role (nothing for completions)."""
        if self.kind is not Kind.CHAT:
            return b""
        return self._frame([{"index": 0, "delta": {"role": "assistant", "content": ""},
                             "logprobs": None, "finish_reason": None}])

    def last(self, finish: str, used: dict[str, Any] | None) -> bytes:
        """The chunk with `finish_reason`, the usage chunk when asked for, `[DONE]`."""
        empty: dict[str, Any] = {"delta": {}} if self.kind is Kind.CHAT else {"text": ""}
        frames = self._frame([{"index": 0, **empty, "logprobs": None, "finish_reason": finish}])
        if used is not None:
            frames += self._frame([], used)
        return frames + b"data: [DONE]\n\n"

    def _frame(self, choices: list[dict[str, Any]], used: dict[str, Any] | None = None
               ) -> bytes:
        doc = {**self.envelope, "choices": choices}
        if used is not None:
            doc["usage"] = used
        return b"data: " + orjson.dumps(doc) + b"\n\n"


def error_frame(body: dict[str, Any]) -> bytes:
    """An error after the stream began: OpenAI's clients raise it when they read it."""
    return b"data: " + orjson.dumps(body) + b"\n\n"


def now() -> int:
    return int(time.time())


# ---------------------------------------------------------------- images

def images(output: Any, response_format: str, created: int) -> dict[str, Any]:
    """`{"created", "data": [{"url"} | {"b64_json"}]}` from the model's file output(s)."""
    urls = output if isinstance(output, list) else [output] if output is not None else []
    data = [{"b64_json": _base64(url)} if response_format == "b64_json" else {"url": url}
            for url in urls]
    return {"created": created, "data": data}


def _base64(url: str) -> str:
    """The base64 of a data: URL's file (its payload as it is when already base64)."""
    head, sep, payload = url.partition(",")
    if not url.startswith("data:") or not sep:
        raise bad("response_format", "b64_json needs the file itself; this server uploads "
                                     "its outputs (--upload-url): ask for url")
    if head.endswith(";base64"):
        return payload
    return base64.b64encode(unquote_to_bytes(payload)).decode()
