"""The model's own `healthcheck()`, asked of a worker over its control channel.

Each request has an id; the worker's answer (HEALTHCHECK_RESULT) resolves the waiter of
that id. A worker that does not answer within the timeout counts as unhealthy.
"""

from __future__ import annotations

import asyncio

from cogserve.runtime.supervisor import WorkerHandle
from cogserve.wire import protocol
from cogserve.wire.protocol import UserHealth


class UserHealthcheck:
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._waiters: dict[int, asyncio.Future[protocol.Message]] = {}
        self._seq = 0

    async def ask(self, process: WorkerHandle) -> str | None:
        """None when healthy, else what failed."""
        self._seq += 1
        hid = self._seq
        waiter: asyncio.Future[protocol.Message] = asyncio.get_running_loop().create_future()
        self._waiters[hid] = waiter
        process.send_control(protocol.healthcheck(hid))
        try:
            result = await asyncio.wait_for(waiter, self.timeout)
        except TimeoutError:
            self._waiters.pop(hid, None)
            return ("Healthcheck failed: user-defined healthcheck timed out after "
                    f"{self.timeout:.1f} seconds")
        if result.get("status") != UserHealth.HEALTHY:
            return str(result.get("error") or "user healthcheck failed")
        return None

    def answered(self, message: protocol.Message) -> None:
        waiter = self._waiters.pop(message["id"], None)
        if waiter is not None and not waiter.done():
            waiter.set_result(message)
