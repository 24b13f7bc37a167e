import os
import time

from cog import BaseRunner, Input


class Runner(BaseRunner):
    """Blocks until a gate file exists, and notes each start in a journal file, so tests
    can see order, overlap and which worker ran what, with conditions instead of sleeps."""

    def setup(self) -> None:
        print(f"setting up gated in {os.getpid()}")

    def run(self, text: str = "x", gate: str = "", journal: str = "",
            sleep: float = Input(default=0.0, ge=0)) -> str:
        started = time.time()
        if journal:
            with open(journal, "a") as fh:
                fh.write(f"{text} {os.getpid()}\n")
        print(f"start {text}")
        limit = time.monotonic() + 60
        while gate and not os.path.exists(gate) and time.monotonic() < limit:
            time.sleep(0.005)
        time.sleep(sleep)
        device = os.environ.get("CUDA_VISIBLE_DEVICES", "-")
        return f"{text} pid={os.getpid()} gpu={device} start={started} end={time.time()}"
