"""The webhook sender: ordered deliveries, throttled updates, superseded states, retries."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from cogserve.process.netpolicy import URLPolicy
from cogserve.runtime.prediction import Prediction
from cogserve.runtime.resolver import Resolver
from cogserve.runtime.webhooks import WebhookConfig, Webhooks
from cogserve.wire.states import WebhookEvent

from .helpers import run


class Answer:
    def __init__(self, status: int) -> None:
        self.status_code = status
        self.headers: dict[str, str] = {}


class Receiver:
    """A stub HTTP client: records each POST; answers with the next status queued."""

    def __init__(self, statuses: list[int] | None = None) -> None:
        self.posts: list[dict[str, Any]] = []
        self.statuses = statuses or []
        self.gate: asyncio.Event | None = None

    async def post(self, url: str, *, content: bytes, headers: Any, timeout: float) -> Answer:
        if self.gate is not None:
            await self.gate.wait()
        self.posts.append(orjson.loads(content))
        return Answer(self.statuses.pop(0) if self.statuses else 200)


class StubWebhooks(Webhooks):
    def __init__(self, config: WebhookConfig, receiver: Receiver) -> None:
        super().__init__(config, Resolver(URLPolicy.ANY))
        self.receiver = receiver

    def client(self) -> Any:
        return self.receiver


def setup(receiver: Receiver, interval: float = 60.0,
          events: frozenset[WebhookEvent] | None = None) -> tuple[Prediction, StubWebhooks]:
    hooks = StubWebhooks(WebhookConfig(interval=interval, backoff=0.0), receiver)
    prediction = Prediction("p1", {}, iterator=True)
    prediction.subscribe(hooks.listener("http://receiver/hook", events))
    return prediction, hooks


def test_start_and_completed_go_at_once_and_updates_are_throttled() -> None:
    async def body() -> None:
        receiver = Receiver()
        p, hooks = setup(receiver)
        p.mark_started()
        for item in "abc":
            p.append_output(item)
        p.succeed(None, 0.1)
        await hooks.drain(5)
        # the first change is sent at once; b and c fall in the interval and ride on
        # the final state, which throttling never holds back
        assert [(d["status"], d["output"]) for d in receiver.posts] == [
            ("starting", []), ("starting", ["a"]), ("succeeded", ["a", "b", "c"])]

    run(body)


def test_a_slow_receiver_gets_fewer_fresher_states_in_order() -> None:
    async def body() -> None:
        receiver = Receiver()
        receiver.gate = asyncio.Event()
        p, hooks = setup(receiver, interval=0.0)
        p.mark_started()
        await asyncio.sleep(0)  # the start delivery is under way, held by the receiver
        for item in "abcd":
            p.append_output(item)
        p.succeed(None, 0.1)
        receiver.gate.set()
        await hooks.drain(5)
        outputs = [d["output"] for d in receiver.posts]
        assert outputs[0] == [] and outputs[-1] == ["a", "b", "c", "d"]
        assert len(outputs) == 3  # the queued update was replaced by the newest state
        assert receiver.posts[-1]["status"] == "succeeded"

    run(body)


def test_a_failed_delivery_is_retried_until_it_lands() -> None:
    async def body() -> None:
        receiver = Receiver([500, 503])
        p, hooks = setup(receiver, events=frozenset({WebhookEvent.COMPLETED}))
        p.mark_started()
        p.append_output("a")
        p.succeed(None, 0.1)
        await hooks.drain(5)
        assert [d["status"] for d in receiver.posts] == ["succeeded"] * 3

    run(body)


def test_the_filter_chooses_the_events() -> None:
    async def body() -> None:
        receiver = Receiver()
        p, hooks = setup(receiver, events=frozenset({WebhookEvent.START}))
        p.mark_started()
        p.append_log("stdout", "x")
        p.succeed(None, 0.1)
        await hooks.drain(5)
        assert [d["status"] for d in receiver.posts] == ["starting"]

    run(body)


def test_a_client_error_is_not_retried() -> None:
    async def body() -> None:
        receiver = Receiver([404])
        p, hooks = setup(receiver, events=frozenset({WebhookEvent.COMPLETED}))
        p.fail("boom")
        await hooks.drain(5)
        assert len(receiver.posts) == 1 and not hooks.active

    run(body)
