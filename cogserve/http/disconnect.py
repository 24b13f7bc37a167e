"""A client that goes away while its prediction runs: noticing it, and cancelling.

Every front end that holds a request open for a prediction (Cog's sync responses and
SSE streams, V2 inference) uses these, so "the client left" means the same everywhere.
"""

from __future__ import annotations

import asyncio
from typing import Any

from cogserve.http.asgi import Receive
from cogserve.http.cycle import Cycle
from cogserve.runtime.errors import UnknownPrediction
from cogserve.runtime.prediction import Prediction
from cogserve.runtime.service import Service

WATCH_DELAY = 0.005  # seconds a prediction runs before its client is watched


def abandon(service: Service, prediction: Prediction) -> None:
    """The client left: cancel the prediction if it is still running."""
    try:
        service.cancel(prediction.id)
    except UnknownPrediction:
        pass  # it finished (or failed) meanwhile


async def wait_or_cancel(service: Service, prediction: Prediction, receive: Receive,
                         *, cancel: bool = True) -> bool:
    """Wait for the prediction; if the client leaves first, cancel it (when `cancel`)
    and return False.

    A server may instead cancel the handler when its client leaves (Ray Serve's direct
    ingress does, rather than sending http.disconnect): that cancels the prediction too.
    """
    try:
        done = prediction.done
        if done.done():
            return True
        cycle = getattr(receive, "__self__", None)
        if type(cycle) is Cycle:  # as wait_or_disconnect would, one call fewer
            if await _wait_on(cycle, done):
                return True
        elif await wait_or_disconnect(prediction, receive):
            return True
    except asyncio.CancelledError:
        if cancel:
            abandon(service, prediction)
        raise
    if cancel:
        abandon(service, prediction)
    return False


async def wait_or_disconnect(prediction: Prediction, receive: Receive) -> bool:
    """Wait for the prediction; False if the client went away first.

    Under cogserve's own HTTP server the request's cycle says when its connection is
    lost (`Cycle.on_disconnect`). Elsewhere (Ray's server) noticing a disconnect needs a
    task blocked in receive(); most predictions finish in well under WATCH_DELAY, so that
    task is only created for the ones that are still running by then: a client that
    leaves earlier is noticed at that point.
    """
    done = prediction.done
    if done.done():
        return True
    cycle = getattr(receive, "__self__", None)
    if type(cycle) is Cycle:
        return await _wait_on(cycle, done)
    loop = asyncio.get_running_loop()
    outcome: asyncio.Future[bool] = loop.create_future()
    listener: asyncio.Future[Any] | None = None

    def finished(_: Any) -> None:
        if not outcome.done():
            outcome.set_result(True)

    def on_message(task: asyncio.Future[Any]) -> None:
        if task.cancelled() or task.exception() is not None or outcome.done():
            return
        if task.result().get("type") == "http.disconnect":
            outcome.set_result(False)

    def watch() -> None:
        nonlocal listener
        if not outcome.done():
            listener = asyncio.ensure_future(receive())
            listener.add_done_callback(on_message)

    done.add_done_callback(finished)
    timer = loop.call_later(WATCH_DELAY, watch)
    try:
        return await outcome
    finally:
        timer.cancel()
        done.remove_done_callback(finished)
        if listener is not None and not listener.done():
            listener.cancel()


async def _wait_on(cycle: Cycle, done: asyncio.Future[None]) -> bool:
    """`wait_or_disconnect` on cogserve's own request cycle: no timer, no task."""
    if cycle.disconnected:
        return False
    outcome: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    def finished(_: Any) -> None:
        if not outcome.done():
            outcome.set_result(True)

    def lost() -> None:
        if not outcome.done():
            outcome.set_result(False)

    done.add_done_callback(finished)
    cycle.on_disconnect = lost
    try:
        return await outcome
    finally:
        cycle.on_disconnect = None
        done.remove_done_callback(finished)
