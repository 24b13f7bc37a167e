"""Records, in a file the test names, that its run() was cancelled."""

import time

from cog import BaseRunner, CancelationException, Input


class Runner(BaseRunner):
    """Waits, and writes down a cancel when one reaches it."""

    def run(self, record: str, sleep: float = Input(default=0.0, ge=0, le=60)) -> str:
        """Sleeps `sleep` seconds; on a cancel writes "canceled" to the file `record`."""
        print("started")
        try:
            time.sleep(sleep)
        except CancelationException:
            with open(record, "w") as fh:
                fh.write("canceled")
            raise
        return "slept"
