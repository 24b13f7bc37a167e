"""The durable store inside the runtime (`Durable` with `Service` over a fake worker): a
queued async prediction reaches its worker only once its start is written, so after a
crash the store never says `queued` of one that ran (it would run twice)."""

from __future__ import annotations

import asyncio
import pathlib
import threading
from collections.abc import Sequence

from cogserve.model.config import ModelConfig
from cogserve.runtime.request import PredictionRequest
from cogserve.runtime.service import Service
from cogserve.runtime.settings import Settings
from cogserve.runtime.store.durable import Durable
from cogserve.runtime.store.interface import (
    Bounds,
    Claimed,
    Page,
    PredictionStore,
    Record,
    Stage,
    Write,
)
from cogserve.wire import protocol

from .fake_workers import FakeSpawner, until
from .helpers import run


class GatedStore(PredictionStore):
    """Writes wait while the gate is shut (a slow disk, a Redis far away)."""

    description = "gated"
    shared = False

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.gate.set()
        self.waiting = threading.Event()  # a write is held at the gate
        self.written: list[Write] = []

    def write(self, batch: Sequence[Write], bounds: Bounds, owner: str) -> None:
        if not self.gate.is_set():
            self.waiting.set()
            self.gate.wait(10)
        self.written += batch

    def get(self, prediction_id: str) -> Record | None:
        return None

    def was_evicted(self, prediction_id: str) -> bool:
        return False

    def page(self, kind: str, status: str | None, limit: int, cursor: str | None) -> Page:
        return Page([], None)

    def claim(self, owner: str) -> Claimed:
        return Claimed()

    def heartbeat(self, owner: str, lease: float) -> None:
        pass

    def close(self, owner: str) -> None:
        pass


def test_a_queued_async_prediction_starts_once_its_start_is_written(
        tmp_path: pathlib.Path) -> None:
    async def main() -> None:
        store = GatedStore()
        durable = Durable(store, Bounds(100, 1 << 20))
        spawner = FakeSpawner()
        service = Service(ModelConfig(directory=tmp_path, predict_ref="run.py:Runner"),
                          Settings(queue_size=2), spawner=spawner, durable=durable)
        await durable.start()
        await service.start()
        try:
            worker = spawner.last
            worker.boot()
            service.create(PredictionRequest({"n": 1}, id="a"), remember=True)
            queued = service.create(PredictionRequest({"n": 1}, id="b"), remember=True)
            await durable.accept(queued, b'{"mode": "predict", "input": {"n": 1}}')
            assert [r.stage for r in store.written if isinstance(r, Record)] == [Stage.QUEUED]
            store.gate.clear()
            worker.data(protocol.done("a", {"output": 1}, 0.01))  # b's slot frees
            await asyncio.to_thread(store.waiting.wait, 5)
            assert worker.predicted() == ["a"]  # b waits for its start to be written
            assert queued.slot is not None and queued.started_at is None
            store.gate.set()
            await until(lambda: worker.predicted() == ["a", "b"])
            running = [r for r in store.written if isinstance(r, Record) and r.id == "b"]
            assert running[1].stage is Stage.RUNNING  # written before it was delivered
            worker.data(protocol.done("b", {"output": 2}, 0.01))
            await asyncio.wait_for(asyncio.shield(queued.done), 5)
            await until(lambda: any(isinstance(r, Record) and r.id == "b"
                                    and r.stage is Stage.FINISHED for r in store.written))
        finally:
            await service.stop()

    run(main)


def test_a_queued_prediction_canceled_while_its_start_is_written_never_runs(
        tmp_path: pathlib.Path) -> None:
    async def main() -> None:
        store = GatedStore()
        durable = Durable(store, Bounds(100, 1 << 20))
        spawner = FakeSpawner()
        service = Service(ModelConfig(directory=tmp_path, predict_ref="run.py:Runner"),
                          Settings(queue_size=2), spawner=spawner, durable=durable)
        await durable.start()
        await service.start()
        try:
            worker = spawner.last
            worker.boot()
            service.create(PredictionRequest({"n": 1}, id="a"), remember=True)
            queued = service.create(PredictionRequest({"n": 1}, id="b"), remember=True)
            await durable.accept(queued, b'{"mode": "predict", "input": {"n": 1}}')
            store.gate.clear()
            worker.data(protocol.done("a", {"output": 1}, 0.01))
            await asyncio.to_thread(store.waiting.wait, 5)
            service.cancel("b")  # the worker is told (it keeps a cancel that came first)
            await until(lambda: worker.cancels() == ["b"])
            worker.data(protocol.cancelled("b"))
            await asyncio.wait_for(asyncio.shield(queued.done), 5)
            store.gate.set()
            await until(lambda: any(isinstance(r, Record) and r.id == "b"
                                    and r.stage is Stage.FINISHED for r in store.written))
            assert worker.predicted() == ["a"]  # ended before it was delivered: never sent
        finally:
            await service.stop()

    run(main)
