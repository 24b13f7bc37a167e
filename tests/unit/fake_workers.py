"""A fake worker spawner for in-process tests of the runtime: no subprocess.

`Service(..., spawner=FakeSpawner())` builds `FakeWorker`s in place of `WorkerProcess`.
A test plays the worker's side: it reports a schema and ready (`fake.boot()`), answers
predictions with data frames (`fake.data(...)`) and ends the process (`fake.exit(code)`);
what the parent sent is kept in `fake.sent_data` / `fake.sent_control`.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

from cogserve.runtime.supervisor import ExitHandler, Handler, WorkerSpec
from cogserve.wire import protocol
from cogserve.wire.protocol import ToWorker

SCHEMA: dict[str, Any] = {"components": {"schemas": {
    "Input": {"type": "object", "properties": {"n": {"type": "integer", "title": "N"}}},
    "Output": {"type": "integer"},
}}}
_pids = itertools.count(1000)
SIGKILL_EXIT = -9


class FakeWorker:
    def __init__(self, spec: WorkerSpec, on_control: Handler, on_data: Handler,
                 on_exit: ExitHandler) -> None:
        self.spec = spec
        self._on_control = on_control
        self._on_data = on_data
        self._on_exit = on_exit
        self.pid: int | None = next(_pids)
        self.exit_code: int | None = None
        self.started = False
        self.killed = False
        self.sent_data: list[protocol.Message] = []
        self.sent_control: list[protocol.Message] = []

    # ---- WorkerHandle

    async def start(self) -> None:
        self.started = True

    def send_control(self, message: protocol.Message) -> None:
        self.sent_control.append(message)

    def send_data(self, message: protocol.Message) -> None:
        self.sent_data.append(message)

    def kill(self) -> None:
        if self.exit_code is None and not self.killed:
            self.killed = True
            asyncio.get_running_loop().call_soon(self.exit, SIGKILL_EXIT)

    async def stop(self, timeout: float = 5.0) -> None:
        if self.exit_code is None:
            self.exit(0)

    # ---- the worker's side, played by the test

    def boot(self, *, is_async: bool = False, concurrency: int | None = None,
             has_healthcheck: bool = False, batch: tuple[int, float] | None = None) -> None:
        """Report the schema (`batch`: a `@batch` run()'s limits), a setup log line, then
        ready."""
        self.control(protocol.schema(SCHEMA, is_async=is_async, streaming=False,
                                     concurrency=concurrency, has_healthcheck=has_healthcheck,
                                     deprecated_predict=False, versions={"python": "3.11"},
                                     descriptions={}, batch=batch))
        self.control(protocol.setup_log("stdout", "setting up\n"))
        self.control(protocol.ready())

    def control(self, message: protocol.Message) -> None:
        self._on_control(message)

    def data(self, message: protocol.Message) -> None:
        self._on_data(message)

    def exit(self, code: int) -> None:
        self.exit_code = code
        self._on_exit(code)

    def predicted(self) -> list[str]:
        """The ids of the predictions sent to this worker, in order."""
        return [m["id"] for m in self.sent_data if m[protocol.KIND] == ToWorker.PREDICT]

    def batches(self) -> list[list[str]]:
        """The ids of each BATCH frame sent to this worker, in order."""
        return [[item["id"] for item in m["items"]] for m in self.sent_data
                if m[protocol.KIND] == ToWorker.BATCH]

    def cancels(self) -> list[str]:
        return [m["id"] for m in self.sent_control if m[protocol.KIND] == ToWorker.CANCEL]


class FakeSpawner:
    def __init__(self) -> None:
        self.workers: list[FakeWorker] = []

    def __call__(self, spec: WorkerSpec, on_control: Handler, on_data: Handler,
                 on_exit: ExitHandler) -> FakeWorker:
        worker = FakeWorker(spec, on_control, on_data, on_exit)
        self.workers.append(worker)
        return worker

    @property
    def last(self) -> FakeWorker:
        return self.workers[-1]


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait for `condition` (timers in the runtime make it true); fail after `timeout`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.001)
