"""jsoncodec: documents with a long text are encoded by msgspec, the same JSON as orjson's."""

from __future__ import annotations

import json

import orjson

from cogserve.runtime.prediction import Prediction
from cogserve.wire import jsoncodec

from .helpers import run

LONG = "é\u2028\"\\\n" + "a" * jsoncodec.LARGE  # escapes included


def test_long_text_is_found_among_top_level_values_only() -> None:
    assert jsoncodec.long_text({"a": 1, "b": LONG}.values())
    assert not jsoncodec.long_text({"a": "x" * (jsoncodec.LARGE - 1), "b": [LONG]}.values())
    assert not jsoncodec.long_text([])


def test_dumps_text_writes_what_orjson_writes() -> None:
    doc = {"id": "x", "input": {"text": LONG}, "output": [1, 2.5, None, True, "é"],
           "metrics": {"predict_time": 0.25}, "error": None}
    assert jsoncodec.dumps_text(doc) == orjson.dumps(doc)
    assert json.loads(jsoncodec.dumps_text(doc)) == doc


def test_a_prediction_with_a_long_input_or_output_encodes_the_same_json() -> None:
    async def body() -> None:
        for given, output in (({"text": LONG}, 3), ({"text": "hi"}, LONG)):
            p = Prediction("p1", given)
            p.mark_started()
            p.succeed(output, 0.5)
            assert orjson.loads(p.encoded()) == orjson.loads(orjson.dumps(p.to_dict()))
            assert p.encoded() == orjson.dumps(p.to_dict())
    run(body)
