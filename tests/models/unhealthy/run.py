import os

from cog import BaseRunner


class Runner(BaseRunner):
    def healthcheck(self) -> bool:
        mode = open("mode").read().strip() if os.path.exists("mode") else "ok"
        if mode == "false":
            return False
        if mode == "raise":
            raise RuntimeError("health probe broke")
        if mode == "hang":
            import time
            time.sleep(60)
        return True

    def run(self) -> str:
        return "ok"
