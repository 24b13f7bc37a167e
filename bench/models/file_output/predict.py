"""Benchmark model: returns a 50 MiB file, to measure how a server ships large outputs
(base64 data URL by default, or an upload with output_file_prefix / --upload-url)."""

import os
import tempfile

from cog import BasePredictor, Input, Path

BLOCK = os.urandom(1 << 20)  # random bytes: nothing on the way can compress them


class Predictor(BasePredictor):
    def predict(self, size_mib: int = Input(default=50, ge=1, le=512)) -> Path:
        path = os.path.join(tempfile.mkdtemp(), "output.bin")
        with open(path, "wb") as fh:
            for _ in range(size_mib):
                fh.write(BLOCK)
        return Path(path)
