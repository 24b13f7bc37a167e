"""Unit tests of the pool's routing and state rules and of the backlog's order and bounds."""

from __future__ import annotations

import asyncio

from cogserve.runtime.backlog import Backlog
from cogserve.runtime.pool import Member, Pool, Slot, WorkerState
from cogserve.runtime.settings import parse_gpus


def _ready(pool: Pool, *free: int) -> None:
    for member, slots in zip(pool.members, free, strict=True):
        member.state = WorkerState.READY
        member.slots = 4
        for _ in range(4 - slots):
            member.acquire()


def _fill(member: Member) -> list[Slot]:
    return [member.acquire() for _ in range(member.free)]


def test_pick_routes_to_the_least_loaded_serving_worker() -> None:
    pool = Pool(3)
    _ready(pool, 1, 3, 2)
    assert pool.pick() is pool.members[1]
    pool.members[1].draining = True  # a reload pending: takes nothing new
    assert pool.pick() is pool.members[2]
    pool.members[2].state = WorkerState.STARTING
    assert pool.pick() is pool.members[0]
    _fill(pool.members[0])
    assert pool.pick() is None
    assert pool.free == 0


def test_single_worker_pick() -> None:
    pool = Pool(1)
    assert pool.pick() is None  # still starting
    _ready(pool, 1)
    assert pool.pick() is pool.members[0]
    _fill(pool.members[0])
    assert pool.pick() is None


def test_a_slot_is_a_permit_that_returns_itself() -> None:
    pool = Pool(1)
    _ready(pool, 4)
    member = pool.members[0]
    slots = _fill(member)
    assert member.free == 0 and member.in_use == 4 and not member.idle
    slots[0].release()
    slots[0].release()  # twice is once
    assert member.free == 1 and pool.pick() is member
    for slot in slots[1:]:
        slot.release()
    assert member.idle and member.free == 4
    member.acquire()
    member.state = WorkerState.DEFUNCT
    assert member.free == 0 and pool.free == 0  # nothing is free until it is ready


def test_state_is_derived_from_the_workers() -> None:
    pool = Pool(2)
    assert pool.state is WorkerState.STARTING
    pool.members[0].state = WorkerState.READY
    pool.members[1].state = WorkerState.DEFUNCT
    assert pool.state is WorkerState.READY  # one can serve
    pool.members[0].state = WorkerState.STARTING
    assert pool.state is WorkerState.STARTING  # one is on its way back
    pool.members[0].state = WorkerState.SETUP_FAILED
    assert pool.state is WorkerState.DEFUNCT
    pool.members[1].state = WorkerState.SETUP_FAILED
    assert pool.state is WorkerState.SETUP_FAILED  # every one failed its setup


def test_gpus_round_robin() -> None:
    pool = Pool(3, parse_gpus(" 0, 1 ,"))
    assert [pool.env_for(m) for m in pool.members] == [
        {"CUDA_VISIBLE_DEVICES": "0"}, {"CUDA_VISIBLE_DEVICES": "1"},
        {"CUDA_VISIBLE_DEVICES": "0"}]
    assert Pool(2).env_for(Pool(2).members[0]) == {}


class _Item:
    def __init__(self, pid: str) -> None:
        self.id = pid


def test_backlog_is_fifo_bounded_and_times_out() -> None:
    async def scenario() -> None:
        timed_out: list[str] = []
        backlog = Backlog(2, 0.01, lambda p: timed_out.append(p.id))
        backlog.push(_Item("a"), {"n": 1})  # type: ignore[arg-type]
        backlog.push(_Item("b"), {"n": 2})  # type: ignore[arg-type]
        assert backlog.full and len(backlog) == 2
        assert backlog.remove("zzz") is None
        first = backlog.pop()
        assert first is not None and first[0].id == "a" and first[1] == {"n": 1}
        assert backlog.retry_after(slots=1, mean_run=5.0) == 5
        assert backlog.retry_after(slots=4, mean_run=0.1) == 1  # never below 1 s
        while not timed_out:  # "b" is left waiting; its timer fires
            await asyncio.sleep(0.005)
        assert timed_out == ["b"]  # "a" left the queue: its timer was cancelled
        removed = backlog.remove("b")
        assert removed is not None and removed.id == "b" and len(backlog) == 0

    asyncio.run(scenario())
