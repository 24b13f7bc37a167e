"""Yields files one at a time; with `count_url` it waits until each was uploaded."""

import json
import tempfile
import time
import urllib.request
from collections.abc import Iterator

from cog import BaseRunner, Path


def uploads(url: str) -> int:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())["count"]


class Runner(BaseRunner):
    def run(self, n: int = 3, count_url: str = "") -> Iterator[Path]:
        for i in range(n):
            with tempfile.NamedTemporaryFile(suffix=".txt", delete=False) as fh:
                fh.write(f"part {i}".encode())
            yield Path(fh.name)
            if count_url:
                # the next file is made only once the receiver holds this one
                deadline = time.monotonic() + 10
                seen = uploads(count_url)
                while seen < i + 1 and time.monotonic() < deadline:
                    time.sleep(0.02)
                    seen = uploads(count_url)
                print(f"receiver had {seen} after yield {i + 1}")
