import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from harness import Server  # noqa: E402


@pytest.fixture
def serve() -> Iterator:
    """`serve("model-dir", *args, env=...)` starts a server that is killed after the test."""
    started: list[Server] = []

    def start(model, *args, **kwargs) -> Server:
        server = Server(model, *args, **kwargs)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def receiver() -> Iterator:
    """`receiver(fail_first=..., hang=...)` starts a local webhook receiver, closed after."""
    from receiver import Receiver

    started: list[Receiver] = []

    def start(**kwargs) -> Receiver:
        hook = Receiver(**kwargs)
        started.append(hook)
        return hook

    yield start
    for hook in started:
        hook.close()
