import ctypes
import os
import sys
import time

from cog import BaseRunner, Input


class Runner(BaseRunner):
    def setup(self) -> None:
        print("setting up sleepy")

    def run(
        self,
        text: str = Input(default="hi"),
        sleep: float = Input(default=0.0, ge=0),
        busy: float = Input(default=0.0, ge=0),
        fail: bool = False,
        crash: str = Input(default="", choices=["", "segfault", "exit", "kill"]),
        swallow: bool = False,
    ) -> str:
        print(f"start {text}")
        print(f"to stderr {text}", file=sys.stderr)
        os.system(f"echo from-child {text}")
        if crash == "segfault":
            ctypes.string_at(0)
        elif crash == "exit":
            os._exit(3)
        elif crash == "kill":
            os.kill(os.getpid(), 9)
        if fail:
            raise ValueError(f"boom {text}")
        if swallow:
            deadline = time.time() + sleep
            while time.time() < deadline:
                try:
                    time.sleep(0.05)
                except BaseException:
                    print("swallowed a cancel")
            return "survived"
        if sleep:
            time.sleep(sleep)
        deadline = time.time() + busy
        while time.time() < deadline:
            pass
        print(f"end {text}")
        return text.upper()
