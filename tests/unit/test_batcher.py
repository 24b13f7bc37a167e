"""Dynamic batching in the runtime, in process with a fake worker: which predictions of a
`@batch` model leave together, when, and how their shared slot comes back."""

from __future__ import annotations

import asyncio
import pathlib
import time

import pytest

from cogserve.runtime.errors import AtCapacity, QueueFull
from cogserve.runtime.request import PredictionRequest
from cogserve.runtime.service import Service
from cogserve.wire import protocol
from cogserve.wire.states import Event, Health, Status

from .fake_workers import FakeSpawner, until
from .test_runtime_core import done, ended, in_service

LIMITS = (3, 0.05)  # max_size, max_wait


def test_a_full_batch_leaves_at_once_and_one_that_follows_a_batch_waits_max_wait(
        tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot(batch=LIMITS)
        first = [service.create(PredictionRequest({"n": 1}, id=i)) for i in ("a", "b", "c")]
        assert worker.batches() == [["a", "b", "c"]]  # full: no wait
        for pid in ("a", "b", "c"):
            worker.data(done(pid))
        assert [await ended(p) for p in first] == [Status.SUCCEEDED] * 3
        loop = asyncio.get_running_loop()
        created = loop.time()
        service.create(PredictionRequest({"n": 1}, id="d"))
        assert worker.batches() == [["a", "b", "c"]]  # just after a batch: it waits for company
        await until(lambda: len(worker.batches()) == 2)
        assert worker.batches()[1] == ["d"]
        assert loop.time() - created >= LIMITS[1] * 0.9

    in_service(tmp_path, body)


def test_a_lone_prediction_on_an_idle_model_leaves_at_once(tmp_path: pathlib.Path) -> None:
    """Issue 35: nobody just answered can join it, so waiting would only add latency."""
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot(batch=LIMITS)
        loop = asyncio.get_running_loop()
        created = loop.time()
        # no batch ended, no window open
        a = service.create(PredictionRequest({"n": 1}, id="a"))
        await until(lambda: worker.batches() == [["a"]])
        assert loop.time() - created < LIMITS[1]  # one turn of the loop, not max_wait
        worker.data(done("a"))
        assert await ended(a) is Status.SUCCEEDED
        idle_from = loop.time()
        await until(lambda: loop.time() - idle_from > LIMITS[1])  # idle past max_wait
        created = loop.time()
        service.create(PredictionRequest({"n": 1}, id="b"))
        await until(lambda: worker.batches() == [["a"], ["b"]])
        assert loop.time() - created < LIMITS[1]

    in_service(tmp_path, body)


def test_once_every_client_just_answered_is_back_the_batch_leaves_before_max_wait(
        tmp_path: pathlib.Path) -> None:
    """A client that sends its next request as soon as it has its answer, alone: nobody
    else is coming back, so waiting out `max_wait` would only add latency (3.75 ms
    against 1.28 ms unbatched, bench scenario 12's model)."""
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot(batch=(4, 0.5))
        loop = asyncio.get_running_loop()
        pending = [service.create(PredictionRequest({"n": 1}, id=i)) for i in ("a", "b")]
        await until(lambda: worker.batches() == [["a", "b"]])
        for pid in ("a", "b"):
            worker.data(done(pid))
        assert [await ended(p) for p in pending] == [Status.SUCCEEDED] * 2
        answered = loop.time()
        service.create(PredictionRequest({"n": 1}, id="c"))
        await until(lambda: loop.time() - answered > 0.05)
        assert len(worker.batches()) == 1  # one of the two answered is back: it waits
        service.create(PredictionRequest({"n": 1}, id="d"))
        await until(lambda: len(worker.batches()) == 2)
        assert worker.batches()[1] == ["c", "d"]
        assert loop.time() - answered < 0.4  # both are back: it left before max_wait

    in_service(tmp_path, body)


def test_predictions_that_waited_through_a_call_are_not_its_clients_coming_back(
        tmp_path: pathlib.Path) -> None:
    """Those that waited while a batch ran do not count as that batch's clients coming
    back: leaving with them alone would leave the clients just answered a whole call
    behind, and the two groups would take turns for good."""
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot(batch=(8, 0.5))
        loop = asyncio.get_running_loop()
        for pid in ("a", "b"):
            service.create(PredictionRequest({"n": 1}, id=pid))
        await until(lambda: worker.batches() == [["a", "b"]])
        for pid in ("c", "d"):  # the slot is busy: they wait
            service.create(PredictionRequest({"n": 1}, id=pid))
        for pid in ("a", "b"):
            worker.data(done(pid))
        freed = loop.time()
        await until(lambda: loop.time() - freed > 0.05)
        assert len(worker.batches()) == 1  # c and d wait for a's and b's clients
        for pid in ("e", "f"):
            service.create(PredictionRequest({"n": 1}, id=pid))
        await until(lambda: len(worker.batches()) == 2)
        assert worker.batches()[1] == ["c", "d", "e", "f"]
        assert loop.time() - freed < 0.4  # before max_wait

    in_service(tmp_path, body, queue_size=8)


def test_while_another_worker_runs_a_batch_its_clients_may_still_join(
        tmp_path: pathlib.Path) -> None:
    """With `--workers 2`, the window does not close early while a batch runs on the
    other worker: closing it would keep the two groups of clients apart for good."""
    async def body(service: Service, spawner: FakeSpawner) -> None:
        first, second = spawner.workers
        for worker in (first, second):
            worker.boot(batch=(4, 0.5))
        loop = asyncio.get_running_loop()
        made = {pid: service.create(PredictionRequest({"n": 1}, id=pid)) for pid in "ab"}
        await until(lambda: first.batches() == [["a", "b"]])
        made["c"] = service.create(PredictionRequest({"n": 1}, id="c"))
        await until(lambda: second.batches() == [["c"]])
        second.data(done("c"))
        assert await ended(made["c"]) is Status.SUCCEEDED
        made["d"] = service.create(PredictionRequest({"n": 1}, id="d"))  # c's client
        answered = loop.time()
        await until(lambda: loop.time() - answered > 0.05)
        assert (first.batches(), second.batches()) == ([["a", "b"]], [["c"]])  # d waits
        for pid in "ab":
            first.data(done(pid))
        assert [await ended(made[pid]) for pid in "ab"] == [Status.SUCCEEDED] * 2
        for pid in "ef":  # a's and b's clients: everyone is back and nothing runs
            made[pid] = service.create(PredictionRequest({"n": 1}, id=pid))
        await until(lambda: len(first.batches()) + len(second.batches()) == 3)
        assert [*first.batches()[1:], *second.batches()[1:]] == [["d", "e", "f"]]
        assert loop.time() - answered < 0.4  # before d's window closed

    in_service(tmp_path, body, queue_size=16, workers=2)


def test_a_batch_whose_window_closed_still_takes_the_requests_being_read(
        tmp_path: pathlib.Path) -> None:
    """Issue 35: closed-loop clients just answered come back one event-loop turn after
    another while the server reads them; a batch that left the moment its window
    closed split them, and the rest waited a whole call (32 clients got batches of 21
    on a 35 ms run()). It leaves at the first turn that brings no new request."""
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot(batch=(5, 0.05))
        loop = asyncio.get_running_loop()

        def arrive(ids: str) -> None:  # one request per turn of the loop, as if read
            service.create(PredictionRequest({"n": 1}, id=ids[0]))
            if ids[1:]:
                loop.call_soon(arrive, ids[1:])

        # an idle model: the window is closed from the first request on; the batch
        # leaves short of max_size once a turn brings none
        started = loop.time()
        arrive("abc")
        await until(lambda: bool(worker.batches()))
        assert worker.batches() == [["a", "b", "c"]]
        assert loop.time() - started < 0.05  # turns of the loop, not max_wait
        # and a burst longer than max_size leaves full, the rest in the next batch
        arrive("defghij")
        await until(lambda: len(worker.batches()) == 2)
        assert worker.batches()[1] == ["d", "e", "f", "g", "h"]

    in_service(tmp_path, body, queue_size=16)


def test_a_stream_that_never_pauses_holds_a_batch_back_max_wait_more_at_most(
        tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot(batch=(50, 0.002))
        loop = asyncio.get_running_loop()
        ids = [f"p{n}" for n in range(40)]

        def arrive(n: int) -> None:  # a request every turn, each turn 1 ms long
            service.create(PredictionRequest({"n": 1}, id=ids[n]))
            time.sleep(0.001)
            if n + 1 < len(ids):
                loop.call_soon(arrive, n + 1)

        arrive(0)
        await until(lambda: bool(worker.batches()) and service.capacity().queue_length + sum(
            map(len, worker.batches())) == len(ids))  # a batch left; the stream has ended
        first = worker.batches()[0]
        assert 1 <= len(first) < len(ids)  # it left before the stream ended, not full
        for pid in first:
            worker.data(done(pid))
        await until(lambda: sum(map(len, worker.batches())) == len(ids))
        assert [pid for batch in worker.batches() for pid in batch] == ids

    in_service(tmp_path, body, queue_size=64)


def test_predictions_waiting_while_the_slot_is_busy_leave_together(
        tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot(batch=LIMITS)
        for pid in ("a", "b", "c", "d", "e"):
            service.create(PredictionRequest({"n": 1}, id=pid))
        assert worker.batches() == [["a", "b", "c"]]  # d, e: not a full batch, they wait
        worker.data(done("a"))
        worker.data(done("b"))
        assert len(worker.batches()) == 1  # the slot is shared: back with the last share
        worker.data(done("c"))
        await until(lambda: len(worker.batches()) == 2)
        assert worker.batches() == [["a", "b", "c"], ["d", "e"]]
        assert all(m[protocol.KIND] != "predict" for m in worker.sent_data)

    in_service(tmp_path, body, queue_size=8)


def test_a_full_batch_goes_ahead_to_a_busy_sync_worker_and_runs_in_its_slot(
        tmp_path: pathlib.Path) -> None:
    """Issue 35: the worker prepares it while the running batch has the GPU."""
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot(batch=LIMITS)
        ids = "abcdefghi"
        made = [service.create(PredictionRequest({"n": 1}, id=pid)) for pid in ids]
        # one running, one ahead; the third waits: one batch ahead per worker at most
        assert worker.batches() == [["a", "b", "c"], ["d", "e", "f"]]
        capacity = service.capacity()
        assert (capacity.slots, capacity.in_use, capacity.queue_length) == (1, 1, 3)
        for pid in "abc":
            worker.data(done(pid))
        # the ahead batch now holds the slot, so the third goes ahead in its turn
        assert worker.batches()[2:] == [["g", "h", "i"]]
        assert service.capacity().in_use == 1
        for pid in "defghi":
            worker.data(done(pid))
        assert [await ended(p) for p in made] == [Status.SUCCEEDED] * 9
        assert service.capacity().in_use == 0
        # nothing of a batch sent ahead is kept once it has run
        assert not service._predictions._ahead  # noqa: SLF001

    in_service(tmp_path, body, queue_size=16)


def test_of_two_busy_workers_the_one_whose_call_began_first_gets_the_batch_ahead(
        tmp_path: pathlib.Path) -> None:
    """A batch sent ahead waits for its worker alone: it goes where a slot is likeliest to
    come back first, not to the first worker of the pool."""
    async def body(service: Service, spawner: FakeSpawner) -> None:
        first, second = spawner.workers
        for worker in (first, second):
            worker.boot(batch=LIMITS)
        made = {pid: service.create(PredictionRequest({"n": 1}, id=pid)) for pid in "abcdef"}
        assert (first.batches(), second.batches()) == ([["a", "b", "c"]], [["d", "e", "f"]])
        for pid in "abc":
            first.data(done(pid))
        assert [await ended(made[pid]) for pid in "abc"] == [Status.SUCCEEDED] * 3
        for pid in "ghi":  # the first worker is free again: it takes these at once
            made[pid] = service.create(PredictionRequest({"n": 1}, id=pid))
        await until(lambda: len(first.batches()) == 2)
        for pid in "jkl":  # both busy: ahead to the second, whose call began before
            made[pid] = service.create(PredictionRequest({"n": 1}, id=pid))
        assert second.batches() == [["d", "e", "f"], ["j", "k", "l"]]
        assert first.batches() == [["a", "b", "c"], ["g", "h", "i"]]
        for worker, pids in ((first, "ghi"), (second, "defjkl")):
            for pid in pids:
                worker.data(done(pid))
        assert [await ended(made[pid]) for pid in "defghijkl"] == [Status.SUCCEEDED] * 9

    in_service(tmp_path, body, queue_size=16, workers=2)


def test_an_async_worker_gets_no_batch_ahead(tmp_path: pathlib.Path) -> None:
    """It would run it at once, beyond its concurrency."""
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot(batch=LIMITS, is_async=True)
        for pid in "abcdef":
            service.create(PredictionRequest({"n": 1}, id=pid))
        assert worker.batches() == [["a", "b", "c"]]

    in_service(tmp_path, body, queue_size=16)


def test_cancelling_every_member_of_a_batch_sent_ahead_gives_its_permit_back(
        tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot(batch=LIMITS)
        made = {pid: service.create(PredictionRequest({"n": 1}, id=pid)) for pid in "abcdef"}
        assert len(worker.batches()) == 2
        for pid in "def":
            service.cancel(pid)
            worker.data(protocol.cancelled(pid))
            assert await ended(made[pid]) is Status.CANCELED
        for pid in "ghi":  # a full batch again: it goes ahead in place of the cancelled one
            service.create(PredictionRequest({"n": 1}, id=pid))
        assert worker.batches()[2:] == [["g", "h", "i"]]

    in_service(tmp_path, body, queue_size=16)


def test_without_a_queue_max_size_per_slot_may_wait_then_409(tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot(batch=LIMITS)
        # one batch running, one sent ahead, one waiting
        for pid in ("a", "b", "c", "d", "e", "f", "g", "h", "i"):
            service.create(PredictionRequest({"n": 1}, id=pid))
        with pytest.raises(AtCapacity):
            service.create(PredictionRequest({"n": 1}, id="j"))
        health = await service.health()
        assert health.status is Health.BUSY and health.queue is None  # no queue was asked

    in_service(tmp_path, body)


def test_with_a_queue_every_prediction_waits_in_it_and_a_full_one_is_429(
        tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot(batch=LIMITS)
        service.create(PredictionRequest({"n": 1}, id="a"))  # in the queue, even with the slot free
        with pytest.raises(QueueFull):
            service.create(PredictionRequest({"n": 1}, id="b"))
        await until(lambda: worker.batches() == [["a"]])

    in_service(tmp_path, body, queue_size=1)


def test_a_member_cancelled_in_the_call_ends_alone(tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot(batch=LIMITS)
        a, b, c = (service.create(PredictionRequest({"n": 1}, id=pid)) for pid in ("a", "b", "c"))
        service.cancel("b")
        assert worker.cancels() == ["b"]
        worker.data(protocol.cancelled("b"))  # what the worker answers at once
        assert await ended(b) is Status.CANCELED
        assert not a.terminal and not c.terminal
        worker.data(done("a", 10))
        worker.data(done("c", 30))
        assert (await ended(a), await ended(c)) == (Status.SUCCEEDED, Status.SUCCEEDED)
        assert (a.to_dict()["output"], c.to_dict()["output"]) == (10, 30)

    in_service(tmp_path, body)


def test_a_lost_worker_fails_every_member_and_frees_its_slot(tmp_path: pathlib.Path) -> None:
    async def body(service: Service, spawner: FakeSpawner) -> None:
        worker = spawner.last
        worker.boot(batch=LIMITS)
        batch = [service.create(PredictionRequest({"n": 1}, id=pid)) for pid in ("a", "b", "c")]
        worker.exit(-9)
        assert [await ended(p) for p in batch] == [Status.FAILED] * 3

    in_service(tmp_path, body)


def test_a_batch_sent_ahead_to_a_worker_that_dies_goes_back_to_the_front(
        tmp_path: pathlib.Path) -> None:
    """Nothing accepted is lost: it had not begun, so it runs on the replacement (a crash
    in a pool; a lone worker's crash ends the server's predictions, as Cog's does)."""
    async def body(service: Service, spawner: FakeSpawner) -> None:
        first, second = spawner.workers
        for worker in (first, second):
            worker.boot(batch=LIMITS)
        events: list[tuple[str, Event]] = []
        made = {pid: service.create(PredictionRequest({"n": 1}, id=pid), listeners=[
            lambda p, event, _: events.append((p.id, event))]) for pid in "abcdefghij"}
        assert first.batches() == [["a", "b", "c"], ["g", "h", "i"]]  # the second: ahead
        assert second.batches() == [["d", "e", "f"]]
        first.exit(-9)
        assert [await ended(made[pid]) for pid in "abc"] == [Status.FAILED] * 3
        member = service._workers.pool.members[0]  # noqa: SLF001 - the permits themselves
        assert member.ahead is None and member.in_use == 0
        assert not any(made[pid].terminal for pid in "ghij")
        # back at the front of the queue, and from there ahead to the other busy worker
        assert second.batches() == [["d", "e", "f"], ["g", "h", "i"]]
        assert service.capacity().queue_length == 1  # j
        await until(lambda: len(spawner.workers) == 3)
        spawner.last.boot(batch=LIMITS)
        await until(lambda: spawner.last.batches() == [["j"]])
        for pid in "defghi":
            second.data(done(pid))
        assert [await ended(made[pid]) for pid in "ghi"] == [Status.SUCCEEDED] * 3
        started = [pid for pid, event in events if event is Event.START]
        assert sorted(started) == list("abcdefghij")  # once each, though g, h, i went twice
        assert all(made[pid].to_dict()["started_at"] is not None for pid in "ghi")

    in_service(tmp_path, body, queue_size=16, workers=2)
