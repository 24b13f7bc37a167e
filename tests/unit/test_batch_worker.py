"""The worker's side of a `@batch` call, in process: one run() for the members of a
BATCH message, its list split back into each member's own frames. The channel to the
parent is the only fake (a list of the messages sent)."""

from __future__ import annotations

import pathlib
import sys
import textwrap

import pytest

from cogserve.model.loader import LoadedModel, load_model
from cogserve.wire import protocol
from cogserve.wire.protocol import FromWorker, Mode
from cogserve.worker import batch as batching
from cogserve.worker import modes
from cogserve.worker.inputs import Downloads
from cogserve.worker.logs import LogRouter, LogTarget, RoutedStream
from cogserve.worker.predict import Cancels


@pytest.fixture(autouse=True)
def in_model_folder(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # restored after run_batch replaces it


def model(tmp_path: pathlib.Path, run_body: str) -> LoadedModel:
    source = textwrap.dedent("""
        from cogserve import BaseRunner, batch, current_scope

        class Runner(BaseRunner):
            @batch(max_size=8)
            def run(self, x: list[int]) -> list[int]:
        """) + textwrap.indent(textwrap.dedent(run_body), " " * 8)
    (tmp_path / "run.py").write_text(source)
    return load_model("run.py:Runner", tmp_path)


class Channel:
    """The worker's data channel, recording: each write is a list of frames."""

    def __init__(self) -> None:
        self.writes: list[list[protocol.Message]] = []

    def send(self, message: protocol.Message) -> None:
        self.writes.append([message])

    def send_many(self, messages: list[protocol.Message]) -> None:
        self.writes.append(list(messages))

    def sent(self) -> list[protocol.Message]:
        return [message for write in self.writes for message in write]


def call_batch(loaded: LoadedModel, batch: batching.Batch, cancels: Cancels) -> None:
    """As a sync worker's loop runs a BATCH message (`worker/main.py`)."""
    mode = modes.Batched(loaded, cancels, on_main=True)
    cancels.begin(batch, mode)
    try:
        mode.run(batch)
    finally:
        cancels.end(batch)


def run_batch(loaded: LoadedModel, values: list[int],
              channel: Channel | None = None) -> list[protocol.Message]:
    channel = channel or Channel()
    router, cancels, downloads = LogRouter(LogTarget(lambda s, d: None)), Cancels(), Downloads()
    sys.stdout = RoutedStream("stdout", router)  # as the worker's capture_output does
    items = [protocol.predict(f"p{i}", {"x": v}, Mode.PREDICT) for i, v in enumerate(values)]
    loaded.instance.cancels = cancels  # the model plays the control thread in one test
    call_batch(loaded, batching.Batch(items, channel, router, cancels, downloads), cancels)
    assert cancels.current is None
    return channel.sent()


def terminal(sent: list[protocol.Message]) -> dict[str, protocol.Message]:
    ends = [m for m in sent if m[protocol.KIND] in protocol.TERMINAL]
    assert len(ends) == len({m["id"] for m in ends}), ends  # one end per member
    return {m["id"]: m for m in ends}


def test_one_call_for_the_batch_and_each_member_gets_its_own_output(
        tmp_path: pathlib.Path) -> None:
    loaded = model(tmp_path, """
        print(f"batch of {len(x)}")
        current_scope().record_metric("size", len(x))
        return [v * 10 for v in x]
        """)
    sent = run_batch(loaded, [1, 2, 3])
    ends = terminal(sent)
    assert {k: (m[protocol.KIND], m["output"]) for k, m in ends.items()} == {
        "p0": ("done", 10), "p1": ("done", 20), "p2": ("done", 30)}
    for member in ("p0", "p1", "p2"):  # what the call logged and recorded, to each
        assert {"t": "log", "source": "stdout", "data": "batch of 3\n", "id": member} in sent
        assert {"t": "metric", "name": "size", "value": 3, "mode": "replace",
                "id": member} in sent


def test_the_outputs_of_a_call_leave_in_one_write(tmp_path: pathlib.Path) -> None:
    channel = Channel()
    run_batch(model(tmp_path, "return x"), [1, 2, 3], channel)
    assert [[m["id"] for m in write] for write in channel.writes] == [["p0", "p1", "p2"]]


def test_an_exception_object_in_the_list_fails_that_member_alone(
        tmp_path: pathlib.Path) -> None:
    loaded = model(tmp_path, """
        return [ValueError(f"no {v}") if v == 2 else v for v in x]
        """)
    ends = terminal(run_batch(loaded, [1, 2, 3]))
    assert ends["p1"][protocol.KIND] == FromWorker.FAILED
    assert ends["p1"]["error"].endswith("ValueError: no 2")
    assert [ends[k]["output"] for k in ("p0", "p2")] == [1, 3]


def test_an_exception_raised_by_run_fails_every_member_with_its_message(
        tmp_path: pathlib.Path) -> None:
    loaded = model(tmp_path, """
        raise RuntimeError("the GPU fell over")
        """)
    ends = terminal(run_batch(loaded, [1, 2]))
    assert {m[protocol.KIND] for m in ends.values()} == {FromWorker.FAILED}
    assert all(m["error"].endswith("RuntimeError: the GPU fell over") for m in ends.values())


@pytest.mark.parametrize(("body", "error"), [
    ("return x[:1]", "@batch: run() returned 1 outputs for a batch of 2 requests"),
    ("return 'ab'", "@batch: run() returned str, not a list of 2 outputs"),
])
def test_a_list_that_breaks_the_contract_fails_every_member(
        tmp_path: pathlib.Path, body: str, error: str) -> None:
    ends = terminal(run_batch(model(tmp_path, body), [1, 2]))
    assert {m[protocol.KIND] for m in ends.values()} == {FromWorker.FAILED}
    assert all(error in m["error"] for m in ends.values()), ends


def test_a_member_cancelled_during_the_call_ends_cancelled_and_the_others_complete(
        tmp_path: pathlib.Path) -> None:
    loaded = model(tmp_path, """
        self.cancels.cancel("p1")  # what the control thread does on a cancel
        print("after the cancel")
        return [v + 1 for v in x]
        """)
    sent = run_batch(loaded, [1, 2, 3])
    ends = terminal(sent)
    assert ends["p1"][protocol.KIND] == FromWorker.CANCELLED
    assert (ends["p0"]["output"], ends["p2"]["output"]) == (2, 4)
    # it ended when the cancel came: nothing of the call reaches it after that
    assert sent.index(ends["p1"]) < sent.index(ends["p0"])
    assert not [m for m in sent if m["id"] == "p1" and m[protocol.KIND] == FromWorker.LOG]


def test_a_cancel_before_the_call_leaves_the_member_out(tmp_path: pathlib.Path) -> None:
    loaded = model(tmp_path, """
        return [len(x)] * len(x)
        """)
    channel = Channel()
    router, cancels, downloads = LogRouter(LogTarget(lambda s, d: None)), Cancels(), Downloads()
    cancels.remember_early("p0")  # a cancel that overtook the batch message
    items = [protocol.predict(f"p{i}", {"x": i}, Mode.PREDICT) for i in range(3)]
    call_batch(loaded, batching.Batch(items, channel, router, cancels, downloads), cancels)
    ends = terminal(channel.sent())
    assert ends["p0"][protocol.KIND] == FromWorker.CANCELLED
    assert (ends["p1"]["output"], ends["p2"]["output"]) == (2, 2)  # a call of two
