"""The runtime (`Service` over `Workers` and `Predictions`) driven in process, with a fake
worker spawner: queue order, cancels, deadlines, lost workers, restarts, drain, health.

No subprocess: the test plays the worker (tests/unit/fake_workers.py), and the runtime's
own timers (cancel timeout, deadline) run on the test's event loop.
"""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from cogserve.model.config import ModelConfig
from cogserve.runtime.errors import AtCapacity, NotReady, QueueFull, UnknownPrediction
from cogserve.runtime.prediction import Prediction
from cogserve.runtime.request import PredictionRequest
from cogserve.runtime.service import Service
from cogserve.runtime.settings import Settings
from cogserve.wire import protocol
from cogserve.wire.states import Health, Status

from .fake_workers import FakeSpawner, until
from .helpers import run

Body = Callable[[Service, FakeSpawner], Awaitable[None]]


@asynccontextmanager
async def started(tmp_path: pathlib.Path, **knobs: object) -> AsyncIterator[
        tuple[Service, FakeSpawner]]:
    settings = Settings(**knobs)  # type: ignore[arg-type]
    spawner = FakeSpawner()
    service = Service(ModelConfig(directory=tmp_path, predict_ref="run.py:Runner"), settings,
                      spawner=spawner)
    await service.start()
    try:
        yield service, spawner
    finally:
        await service.stop()


def in_service(tmp_path: pathlib.Path, body: Body, **knobs: object) -> None:
    async def main() -> None:
        async with started(tmp_path, **knobs) as (service, spawner):
            await body(service, spawner)
    run(main)


def done(prediction_id: str, output: int = 1) -> protocol.Message:
    return protocol.done(prediction_id, {"output": output}, 0.01)


async def ended(prediction: Prediction) -> Status:
    await asyncio.wait_for(asyncio.shield(prediction.done), 5)
    return Status(prediction.to_dict()["status"])


def test_health_moves_from_starting_to_ready_busy_and_defunct(tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        assert (await service.health()).status is Health.STARTING
        with pytest.raises(NotReady):
            service.create(PredictionRequest({"n": 1}, id="early"))
        spawner.last.boot()
        assert service.ready.is_set()
        health = await service.health()
        assert health.status is Health.READY
        assert health.setup.status is Status.SUCCEEDED
        assert health.setup.logs == "setting up\n"
        assert health.versions == {"python": "3.11"}
        prediction = service.create(PredictionRequest({"n": 1}, id="a"))
        assert (await service.health()).status is Health.BUSY
        spawner.last.data(done("a"))
        assert await ended(prediction) is Status.SUCCEEDED
        assert (await service.health()).status is Health.READY
        spawner.last.exit(-11)
        assert service.status is Health.DEFUNCT
        assert "SIGSEGV" in (service.fatal_reason or "")

    in_service(tmp_path, body)


def test_queue_hands_predictions_to_the_slot_in_order(tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot()
        first, second, third = (service.create(PredictionRequest({"n": 1}, id=i))
                                for i in ("a", "b", "c"))
        assert worker.predicted() == ["a"]
        assert (await service.health()).queue is not None
        with pytest.raises(QueueFull):
            service.create(PredictionRequest({"n": 1}, id="d"))
        worker.data(done("a"))
        assert worker.predicted() == ["a", "b"]  # the slot went to the oldest at once
        worker.data(done("b"))
        worker.data(done("c"))
        assert [await ended(p) for p in (first, second, third)] == [Status.SUCCEEDED] * 3
        assert worker.predicted() == ["a", "b", "c"]

    in_service(tmp_path, body, queue_size=2)


def test_no_queue_refuses_at_capacity(tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        spawner.last.boot()
        service.create(PredictionRequest({"n": 1}, id="a"))
        with pytest.raises(AtCapacity):
            service.create(PredictionRequest({"n": 1}, id="b"))
        assert service.running("b") is None

    in_service(tmp_path, body)


def test_cancel_of_a_queued_prediction_never_reaches_the_worker(
        tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot()
        service.create(PredictionRequest({"n": 1}, id="a"))
        queued = service.create(PredictionRequest({"n": 1}, id="b"))
        service.cancel("b")
        assert await ended(queued) is Status.CANCELED
        assert worker.cancels() == []
        worker.data(done("a"))
        assert worker.predicted() == ["a"]
        with pytest.raises(UnknownPrediction):
            service.cancel("b")

    in_service(tmp_path, body, queue_size=2)


def test_cancel_of_a_running_prediction_waits_for_the_worker(tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot()
        prediction = service.create(PredictionRequest({"n": 1}, id="a"))
        waiting = asyncio.ensure_future(service.cancel_and_wait("a"))
        await until(lambda: worker.cancels() == ["a"])
        assert not waiting.done()
        worker.data(protocol.cancelled("a"))
        assert await waiting is prediction
        assert await ended(prediction) is Status.CANCELED
        assert service.running("a") is None
        assert service.current_health is Health.READY  # the slot is free again

    in_service(tmp_path, body)


def test_deadline_cancels_and_fails_the_prediction(tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot()
        prediction = service.create(PredictionRequest({"n": 1}, id="a"))
        await until(lambda: worker.cancels() == ["a"])  # the deadline's cancel
        worker.data(protocol.cancelled("a"))
        assert await ended(prediction) is Status.FAILED
        assert "deadline" in (prediction.to_dict()["error"] or "")

    in_service(tmp_path, body, predict_timeout=0.05)


def test_ignored_cancel_restarts_the_worker(tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        first = spawner.last
        first.boot()
        prediction = service.create(PredictionRequest({"n": 1}, id="a"))
        service.cancel("a")
        assert await ended(prediction) is Status.CANCELED  # killed after the cancel timeout
        assert first.killed
        assert "cancel was ignored" in prediction.logs
        await until(lambda: len(spawner.workers) == 2)
        assert service.status is Health.STARTING and service.restarting
        with pytest.raises(AtCapacity):  # a busy slot, not "not ready"
            service.create(PredictionRequest({"n": 1}, id="b"))
        spawner.last.boot()
        assert service.status is Health.READY
        service.create(PredictionRequest({"n": 1}, id="b"))
        assert spawner.last.predicted() == ["b"]

    in_service(tmp_path, body, cancel_timeout=0.05)


def test_a_lost_worker_fails_what_ran_on_it_and_what_waited(tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot(is_async=True, concurrency=2)
        running = [service.create(PredictionRequest({"n": 1}, id=i)) for i in ("a", "b")]
        queued = service.create(PredictionRequest({"n": 1}, id="c"))
        worker.exit(-9)
        for prediction in [*running, queued]:
            assert await ended(prediction) is Status.FAILED
        assert "SIGKILL" in (running[0].to_dict()["error"] or "")
        assert "cannot run" in (queued.to_dict()["error"] or "")
        assert service.status is Health.DEFUNCT
        with pytest.raises(NotReady):
            service.create(PredictionRequest({"n": 1}, id="d"))

    in_service(tmp_path, body, queue_size=4)


def test_a_pool_replaces_a_crashed_worker_while_the_other_serves(
        tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        one, two = spawner.workers
        one.boot()
        two.boot()
        assert len((await service.health()).workers or ()) == 2
        prediction = service.create(PredictionRequest({"n": 1}, id="a"))
        owner = one if one.predicted() else two
        other = two if owner is one else one
        owner.exit(-11)
        assert await ended(prediction) is Status.FAILED
        assert service.status is Health.READY  # the other one serves meanwhile
        await until(lambda: len(spawner.workers) == 3)
        service.create(PredictionRequest({"n": 1}, id="b"))
        assert other.predicted()[-1] == "b"
        spawner.last.boot()
        assert [w.status for w in (await service.health()).workers or ()] == [Health.READY] * 2

    in_service(tmp_path, body, workers=2)


def test_drain_waits_for_the_running_prediction(tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot()
        prediction = service.create(PredictionRequest({"n": 1}, id="a"))
        service.begin_shutdown()
        with pytest.raises(NotReady):
            service.create(PredictionRequest({"n": 1}, id="b"))
        draining = asyncio.ensure_future(service.drain())
        await asyncio.sleep(0)
        assert not draining.done()
        worker.data(done("a"))
        await asyncio.wait_for(draining, 5)
        assert await ended(prediction) is Status.SUCCEEDED
        assert worker.cancels() == []

    in_service(tmp_path, body)


def test_drain_past_its_bounds_cancels_then_fails_and_kills(tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot()
        prediction = service.create(PredictionRequest({"n": 1}, id="a"))
        service.begin_shutdown()
        await asyncio.wait_for(service.drain(), 5)
        assert worker.cancels() == ["a"]
        assert await ended(prediction) is Status.FAILED
        assert "shut down" in (prediction.to_dict()["error"] or "")
        assert worker.killed

    in_service(tmp_path, body, drain_timeout=0.02, cancel_timeout=0.02)


def test_setup_failure_and_user_healthcheck(tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.control(protocol.setup_log("stderr", "boom\n"))
        worker.control(protocol.setup_failed("boom"))
        health = await service.health()
        assert health.status is Health.SETUP_FAILED
        assert health.setup.status is Status.FAILED and "boom" in health.setup.logs

    in_service(tmp_path, body)

    async def healthy(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot(has_healthcheck=True)
        checking = asyncio.ensure_future(service.health())
        await until(lambda: bool(worker.sent_control))
        request = worker.sent_control[-1]
        worker.control(protocol.healthcheck_result(request["id"], protocol.UserHealth.UNHEALTHY,
                                                   "disk full"))
        health = await checking
        assert health.status is Health.UNHEALTHY
        assert health.user_healthcheck_error == "disk full"

    in_service(tmp_path, healthy)
