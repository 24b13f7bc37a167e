import os
import time

from cog import BaseRunner, CancelationException, Input


class Runner(BaseRunner):
    """A sync run() that cleans up on cancel and re-raises, as Cog asks models to."""

    def run(self, text: str = "x", sleep: float = Input(default=0.0, ge=0),
            busy: float = Input(default=0.0, ge=0),
            cleanup: float = Input(default=0.0, ge=0), spam: bool = False,
            cleanup_gate: str = "") -> str:
        print(f"start {text}")
        try:
            time.sleep(sleep)
            deadline = time.time() + busy
            n = 0
            while time.time() < deadline:
                n += 1
                if spam and n % 50 == 0:
                    print(f"line {n}")  # a cancel lands mid-print, mid-write to the parent
        except CancelationException:
            print(f"cleanup {text}")
            time.sleep(cleanup)  # a slow cleanup: the prediction exists until it ends
            deadline = time.monotonic() + 60
            while cleanup_gate and not os.path.exists(cleanup_gate):  # ... or the test says
                if time.monotonic() > deadline:
                    break
                time.sleep(0.01)
            raise
        print(f"end {text}")
        return text.upper()
