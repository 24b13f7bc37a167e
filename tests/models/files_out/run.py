"""One file output, made in the ways models make them: named, tempfile, handle, input."""

import os
import tempfile
from typing import Optional

from cog import BaseRunner, Input, Path

BLOCK = b"0123456789abcdef" * 65536  # 1 MiB; the test recomputes the same bytes


def write(path: str, size: int) -> None:
    with open(path, "wb") as fh:
        left = size
        while left > 0:
            fh.write(BLOCK[: min(left, len(BLOCK))])
            left -= len(BLOCK)


class Runner(BaseRunner):
    def run(
        self,
        mode: str = Input(default="named", choices=["named", "temp", "handle", "echo"]),
        size: int = Input(default=5, ge=0),
        name: str = "result.txt",
        src: Optional[Path] = Input(default=None),
    ) -> Path:
        if mode == "echo":
            assert src is not None
            return src
        if mode == "temp":
            fd, path = tempfile.mkstemp(suffix=os.path.splitext(name)[1])
            os.close(fd)
            write(path, size)
            return Path(path)
        path = os.path.join(tempfile.mkdtemp(), name)
        write(path, size)
        if mode == "handle":
            return open(path, "rb")  # noqa: SIM115 - the runtime reads and closes it
        return Path(path)
