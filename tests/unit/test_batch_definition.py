"""`@batch` read at load time: the per-request signature it serves, and every way to
declare it wrong refused with the file, the line and what to write instead."""

from __future__ import annotations

import pathlib
import re
import textwrap

import pytest

from cogserve.exceptions import DefinitionError
from cogserve.model.loader import load_model
from cogserve.model.specs import TypeKind
from cogserve.wire.protocol import Mode


@pytest.fixture(autouse=True)
def in_model_folder(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # as the worker runs: errors name files from there


def load(tmp_path: pathlib.Path, body: str, mode: Mode = Mode.PREDICT) -> object:
    source = "from cogserve import BaseRunner, Input, batch, streaming\n" \
             "from collections.abc import AsyncIterator\n\n" + textwrap.dedent(body)
    (tmp_path / "run.py").write_text(source)
    return load_model("run.py:Runner", tmp_path, mode)


GOOD = """
class Runner(BaseRunner):
    @batch(max_size=8, max_wait=0.005)
    def run(self, text: list[str], n: list[int] = Input(default=2, ge=0)) -> list[str]:
        return [t * k for t, k in zip(text, n)]
"""


def test_a_batched_run_serves_the_per_request_signature(tmp_path: pathlib.Path) -> None:
    model = load(tmp_path, GOOD)
    assert model.batch is not None  # type: ignore[attr-defined]
    assert (model.batch.max_size, model.batch.max_wait) == (8, 0.005)  # type: ignore[attr-defined]
    sig = model.signature  # type: ignore[attr-defined]
    assert [(i.name, i.type.kind) for i in sig.inputs] == [("text", TypeKind.STR),
                                                           ("n", TypeKind.INT)]
    assert sig.inputs[1].info.default == 2 and sig.inputs[1].info.ge == 0
    assert sig.output.type.kind == TypeKind.STR and sig.output.iterator is None


def test_a_batched_run_may_stream_its_events(tmp_path: pathlib.Path) -> None:
    """@streaming serves SSE (start, logs, metrics, completed) per request; only an
    iterator output is refused, since a batched run() returns whole outputs."""
    model = load(tmp_path, """
        class Runner(BaseRunner):
            @streaming
            @batch(max_size=4)
            def run(self, text: list[str]) -> list[str]:
                return text
        """)
    assert model.streaming and model.batch is not None  # type: ignore[attr-defined]


def test_an_unbatched_run_has_no_limits(tmp_path: pathlib.Path) -> None:
    model = load(tmp_path, """
        class Runner(BaseRunner):
            def run(self, text: list[str]) -> list[str]:
                return text
        """)
    assert model.batch is None  # type: ignore[attr-defined]
    assert model.signature.inputs[0].type.kind == TypeKind.LIST  # type: ignore[attr-defined]


@pytest.mark.parametrize(("body", "expected"), [
    ("""
     class Runner(BaseRunner):
         @batch(max_size=4)
         def run(self, text: str) -> list[str]:
             return [text]
     """, 'Runner.run() parameter "text": @batch: is str; a batched run() takes list[T]'),
    ("""
     class Runner(BaseRunner):
         @batch(max_size=4)
         def run(self, text: list[str]) -> str:
             return text[0]
     """, "Runner.run(): @batch: returns str; a batched run() takes list[T] for every "
          "input and returns list[T]"),
    ("""
     class Runner(BaseRunner):
         @batch(max_size=0)
         def run(self, text: list[str]) -> list[str]:
             return text
     """, "@batch(max_size=0): max_size must be an integer of at least 1"),
    ("""
     class Runner(BaseRunner):
         @batch(max_size=-3)
         def run(self, text: list[str]) -> list[str]:
             return text
     """, "@batch(max_size=-3): max_size must be an integer of at least 1"),
    ("""
     class Runner(BaseRunner):
         @batch(max_size=True)
         def run(self, text: list[str]) -> list[str]:
             return text
     """, "@batch(max_size=True): max_size must be an integer"),
    ("""
     class Runner(BaseRunner):
         @batch(max_size=4, max_wait=-0.1)
         def run(self, text: list[str]) -> list[str]:
             return text
     """, "@batch(max_wait=-0.1): max_wait must be a number of seconds of at least 0"),
    ("""
     class Runner(BaseRunner):
         @batch(max_size=4, max_wait="10ms")
         def run(self, text: list[str]) -> list[str]:
             return text
     """, "@batch(max_wait='10ms'): max_wait must be a number"),
    ("""
     class Runner(BaseRunner):
         @batch(max_size=4)
         def run(self, text: list[str]) -> list[AsyncIterator[str]]:
             return text
     """, "@batch: run() returns one list of outputs, not an iterator per item"),
    ("""
     class Runner(BaseRunner):
         @batch(max_size=4)
         async def run(self, text: list[str]) -> AsyncIterator[list[str]]:
             yield text
     """, "@batch: run() is a generator; a batched run() returns the list of outputs"),
])
def test_bad_declarations_are_refused_at_load_time(tmp_path: pathlib.Path, body: str,
                                                   expected: str) -> None:
    with pytest.raises(DefinitionError) as caught:
        load(tmp_path, body)
    assert expected in str(caught.value)
    assert re.match(r"run\.py:\d+: ", str(caught.value)), str(caught.value)  # file and line


def test_a_batched_train_is_refused(tmp_path: pathlib.Path) -> None:
    source = "from cogserve import batch\n\n" \
             "@batch(max_size=2)\ndef train(x: list[int]) -> list[int]:\n    return x\n"
    (tmp_path / "train.py").write_text(source)
    with pytest.raises(DefinitionError, match="only run\\(\\) can take a batch"):
        load_model("train.py:train", tmp_path, Mode.TRAIN)
