"""The deprecated cog.File output: run() returns an open file-like object."""

import io

from cog import BaseRunner, File


class Runner(BaseRunner):
    def run(self, text: str = "abc") -> File:
        handle = io.BytesIO(text.encode())
        handle.name = "result.txt"
        return handle
