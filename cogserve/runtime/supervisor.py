"""Start, watch and stop the worker subprocess; carry messages to and from it.

The supervisor knows nothing of HTTP or predictions' meaning: it hands each message
from the worker to the `Service` callbacks and reports how the process ended.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import orjson

from cogserve.runtime.channel import AsyncChannel
from cogserve.wire import protocol
from cogserve.wire.protocol import Mode

Handler = Callable[[protocol.Message], None]
ExitHandler = Callable[[int | None], None]


@dataclass
class WorkerSpec:
    ref: str
    directory: str
    mode: Mode = Mode.PREDICT
    train_ref: str | None = None
    schema_only: bool = False
    env: dict[str, str] | None = None
    python: str = sys.executable  # a model environment's interpreter (cogserve/envs)


class WorkerHandle(Protocol):
    """What the parent needs of one worker: `WorkerProcess` is the real one; the runtime's
    unit tests pass a spawner of fakes (no subprocess)."""

    @property
    def pid(self) -> int | None: ...
    @property
    def exit_code(self) -> int | None: ...
    async def start(self) -> None: ...
    def send_control(self, message: protocol.Message) -> None: ...
    def send_data(self, message: protocol.Message) -> None: ...
    def kill(self) -> None: ...
    async def stop(self, timeout: float = 5.0) -> None: ...


# builds (does not start) one worker: its spec, control and data handlers, exit handler
Spawner = Callable[[WorkerSpec, Handler, Handler, ExitHandler], WorkerHandle]


def describe_exit(code: int | None) -> str:
    if code is None:
        return "is still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with status {code}"


class WorkerProcess:
    """One worker subprocess and its two channels."""

    def __init__(self, spec: WorkerSpec, on_control: Handler, on_data: Handler,
                 on_exit: ExitHandler) -> None:
        self.spec = spec
        self._on_control = on_control
        self._on_data = on_data
        self._on_exit = on_exit
        self.process: subprocess.Popen[bytes] | None = None
        self.control: AsyncChannel | None = None
        self.data: AsyncChannel | None = None
        self._waiter: asyncio.Task[None] | None = None
        self.exit_code: int | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    async def start(self) -> None:
        control_parent, control_child = socket.socketpair()
        data_parent, data_child = socket.socketpair()
        env = dict(os.environ)
        env.update(self.spec.env or {})
        env[protocol.WORKER_ENV] = orjson.dumps(protocol.worker_config(
            ref=self.spec.ref, directory=self.spec.directory, mode=self.spec.mode,
            train_ref=self.spec.train_ref, schema_only=self.spec.schema_only,
            control_fd=control_child.fileno(), data_fd=data_child.fileno(),
        )).decode()
        self.process = subprocess.Popen(
            [self.spec.python, "-m", "cogserve.worker"],
            pass_fds=(control_child.fileno(), data_child.fileno()),
            env=env,
            stdin=subprocess.DEVNULL,
            # its own process group, so that whatever the model starts (a server forked in
            # setup(), a subprocess of a killed run()) ends with the worker: `end_group`
            process_group=0,
        )
        control_child.close()
        data_child.close()
        self.control = await AsyncChannel.open(control_parent, self._on_control)
        self.data = await AsyncChannel.open(data_parent, self._on_data)
        for channel in (self.control, self.data):
            channel.closed.add_done_callback(self._channel_lost)
        self._waiter = asyncio.get_running_loop().create_task(self._wait())

    def _channel_lost(self, _: object) -> None:
        """A channel closed: the worker has ended, or its model closed (or replaced) the
        socket's file descriptor. A worker the parent cannot talk to can never finish a
        prediction, so it is ended: either way its exit is then handled like a crash."""
        self.kill()

    async def _wait(self) -> None:
        assert self.process is not None
        process = self.process
        loop = asyncio.get_running_loop()
        try:
            code = await loop.run_in_executor(None, process.wait)
        except asyncio.CancelledError:
            # the event loop is going away without stop() (Ctrl-C in `cogserve predict`):
            # the worker, in its own process group, would not see the SIGINT, and
            # asyncio.run would wait for it in the executor's process.wait()
            self.kill()
            raise
        end_group(process.pid)
        # let both channels deliver what the worker wrote before it ended
        for channel in (self.control, self.data):
            if channel is None:
                continue
            try:
                await asyncio.wait_for(asyncio.shield(channel.closed), 1.0)
            except (TimeoutError, asyncio.CancelledError):
                pass
        self.exit_code = code
        self._on_exit(code)

    def send_control(self, message: protocol.Message) -> None:
        if self.control is not None:
            self.control.send(message)

    def send_data(self, message: protocol.Message) -> None:
        if self.data is not None:
            self.data.send(message)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                self.process.kill()
            except ProcessLookupError:
                pass
            end_group(self.process.pid)

    async def stop(self, timeout: float = 5.0) -> None:
        """Ask the worker to exit; kill it if it does not."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        self.send_control(protocol.shutdown())
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(loop.run_in_executor(None, process.wait), timeout)
        except TimeoutError:
            self.kill()
        end_group(process.pid)


def end_group(pgid: int) -> None:
    """SIGKILL what is left of a worker's process group once the worker has ended.

    A child that called setsid() has left the group and is not reached; the worker's
    own pid is never reused while the group still has members, so this hits no stranger.
    """
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
