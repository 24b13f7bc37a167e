"""The work of the CPU proxy of the GPU path: decode one JPEG, keep count of the CPU it took.

The GPU scenario's model decodes a 224x224 JPEG and runs a network on the GPU; on a CPU
the network is left out, so what remains is the decode (Pillow, ~0.5-1 ms a core) and
whatever the server spends around it. Each run() measures its own CPU (this thread's
`time.thread_time()` around the decodes) into `Meter`, so the bench can subtract the
model's work from the process's and see the server's overhead alone. Shared by the
unbatched and batched cogserve models and the LitServe app.

`BENCH_RUN_WAIT_S` (scenario 12c) makes each call GPU-shaped instead: it reads each
image's header (the input arrived whole and is a JPEG) and then waits that long, whatever
the batch's size, leaving the CPU to the server as a CUDA call does; how full the
batches are then decides the rate.
"""

import io
import json
import os
import time

from PIL import Image

WAIT_S = float(os.environ.get("BENCH_RUN_WAIT_S") or 0)


class Meter:
    """CPU seconds spent decoding in this process, and how many images."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.images = 0

    def decode_files(self, paths: list) -> list[str]:
        started = time.thread_time()
        sizes = []
        for path in paths:
            with Image.open(path) as image:
                if not WAIT_S:
                    image.load()
                sizes.append(f"{image.width}x{image.height}")
        if WAIT_S:
            time.sleep(WAIT_S)
        self.cpu += time.thread_time() - started
        self.images += len(paths)
        return sizes

    def decode_bytes(self, blobs: list[bytes]) -> list[str]:
        return self.decode_files([io.BytesIO(blob) for blob in blobs])

    def report(self) -> str:
        """What a `stats` request answers: this process, its decode CPU and count."""
        return json.dumps({"pid": os.getpid(), "run_cpu_s": self.cpu, "images": self.images})
