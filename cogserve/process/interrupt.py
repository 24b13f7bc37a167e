"""Ctrl-C for the commands that run a coroutine to its end (`predict`, `schema`, `env`).

`asyncio.run` handles SIGINT with `signal.signal`: its handler runs only when the main
thread next runs Python code. A process-group SIGINT may be taken by any thread that does
not block it, e.g. the executor thread waiting for the worker (process.wait) or for uv;
the main thread then sleeps in the loop's select() until something else wakes it, which
during a long, silent run() is when it returns. The loop's own signal handler writes to its
wakeup fd, which wakes select() from any thread.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(work: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(work)`, where Ctrl-C cancels `work` and raises KeyboardInterrupt."""
    try:
        return asyncio.run(_interruptible(work))
    except asyncio.CancelledError:  # only Ctrl-C cancels it here
        raise KeyboardInterrupt from None


async def _interruptible(work: Coroutine[Any, Any, T]) -> T:
    """Removed at the end: a Ctrl-C while the loop shuts down raises KeyboardInterrupt, as
    a second Ctrl-C does under asyncio.run."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    loop.add_signal_handler(signal.SIGINT, task.cancel)
    try:
        return await work
    finally:
        loop.remove_signal_handler(signal.SIGINT)
