"""Run the real `cogserve` command as a process (predict, run, schema) and end it by pid."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

CONTRACT = pathlib.Path(__file__).parent / "models" / "contract"
EXAMPLES = pathlib.Path(__file__).parent.parent / "examples"


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def cogserve(*args: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None,
             env: dict[str, str] | None = None, timeout: float = 60.0,
             stdin: str | None = None, unset: tuple[str, ...] = ()) -> Result:
    """`cogserve ARGS...`; the whole process group is killed if it outlives the test.
    `unset`: variables of this process the command must not see."""
    full_env = {k: v for k, v in {**os.environ, **(env or {})}.items() if k not in unset}
    process = subprocess.Popen(
        [sys.executable, "-m", "cogserve.cli", *map(str, args)], cwd=cwd, env=full_env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
    )
    try:
        out, err = process.communicate(stdin, timeout=timeout)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return Result(process.returncode, out, err)


def schema_of(model: str | os.PathLike[str]) -> dict[str, Any]:
    """The OpenAPI document `cogserve schema` prints for a contract model."""
    directory = model if os.path.isabs(str(model)) else CONTRACT / model
    result = cogserve("schema", directory)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)
