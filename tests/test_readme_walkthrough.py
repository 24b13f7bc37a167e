"""The README's curl walk-through, run as written (ports swapped for free ones): every
command in its order, the receiver it starts, and what its comments promise."""

from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import time

from harness import free_port

README = pathlib.Path(__file__).parent.parent / "README.md"
HELLO = pathlib.Path(__file__).parent.parent / "examples" / "hello-world"


def walkthrough_commands() -> list[str]:
    """The shell commands of the block under "A walk-through with curl", in order."""
    text = README.read_text()
    section = text[text.index("## A walk-through with curl"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None
    commands: list[str] = []
    current = ""
    quoted = False  # inside a multi-line '...' argument (the receiver's program)
    for line in block.group(1).splitlines():
        if not current and not quoted and (not line.strip() or line.startswith("#")):
            continue
        current += line + "\n"
        quoted ^= line.count("'") % 2 == 1
        if not quoted and not line.endswith("\\"):
            commands.append(current)
            current = ""
    return commands


def poll(port: int, path: str, status: str) -> dict:
    deadline = time.monotonic() + 20
    while True:
        body = json.loads(subprocess.run(["curl", "-s", f"localhost:{port}{path}"],
                                         capture_output=True, text=True).stdout)
        if body.get("status") == status or time.monotonic() > deadline:
            return body
        time.sleep(0.05)


def test_the_walkthrough_works_from_top_to_bottom(serve):
    server = serve(HELLO)
    hook_port = free_port()
    commands = [c.replace("5000", str(server.port)).replace("9000", str(hook_port))
                for c in walkthrough_commands()]
    assert commands[0].startswith("curl -s localhost")
    outputs: list[str] = []
    receiver: subprocess.Popen[str] | None = None
    try:
        for command in commands:
            if command.startswith("python3 -c"):  # the receiver: it runs until we stop it
                receiver = subprocess.Popen(["bash", "-c", "exec " + command],
                                            stdout=subprocess.PIPE, text=True,
                                            start_new_session=True)
                _wait_for_port(hook_port)
                outputs.append("")
                continue
            done = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                                  timeout=30)
            assert done.returncode == 0, (command, done.stderr)
            outputs.append(done.stdout)
        by_start = dict(zip(commands, outputs, strict=True))

        def output_of(fragment: str) -> dict:
            [(_, out)] = [(c, o) for c, o in by_start.items() if fragment in c]
            return json.loads(out)

        assert output_of("/health-check")["status"] == "READY"
        assert output_of('"times": 2')["output"] == "hello Ada hello Ada"
        assert len(output_of('"times": 99')["detail"]) == 2  # 422: both fields named
        assert output_of("predictions/my-id-1 \\")["status"] == "starting"  # the 202
        assert output_of("predictions/my-id-1\n")["id"] == "my-id-1"  # the GET
        assert output_of("my-id-2/cancel")["status"] == "canceled"  # ran 30 s otherwise
        assert output_of("my-id-2   #")["status"] == "canceled"
        assert poll(server.port, "/predictions/my-id-1", "succeeded")["output"] == "hello Grace"
        assert "paths" in output_of("openapi.json")
        assert output_of("/v2/models/hello-world")["name"] == "hello-world"
        assert receiver is not None
        deadline = time.monotonic() + 20
        printed = ""
        os.set_blocking(receiver.stdout.fileno(), False)
        while '"status":"succeeded"' not in printed.replace(" ", ""):
            assert time.monotonic() < deadline, printed
            printed += receiver.stdout.read() or ""
            time.sleep(0.05)
        assert "hello Grace" in printed
    finally:
        if receiver is not None:
            os.killpg(receiver.pid, signal.SIGKILL)
            receiver.wait()


def _wait_for_port(port: int) -> None:
    import socket

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.02)
    raise AssertionError(f"the README's receiver never listened on {port}")
