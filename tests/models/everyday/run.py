"""One model for many small behaviours, chosen per prediction by `action`.

It keeps state across predictions (`remember`), talks to a helper process started in
setup() (`ping`), leaves the worker with sys.exit (`exit`), and has an async healthcheck
whose answer a prediction sets (`health`: ok, false, raise or hang).
"""

import asyncio
import multiprocessing
import sys
import time

from cog import BaseRunner, File, Path


def _helper(conn, workers_end) -> None:  # runs in the process setup() starts
    workers_end.close()  # so that the worker's end closing (the worker ended) is an EOF here
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        conn.send(f"pong to {message}")


class Runner(BaseRunner):
    def setup(self) -> None:
        self.seen: list[str] = []
        self.health = "ok"
        self.conn, child = multiprocessing.Pipe()
        self.helper = multiprocessing.get_context("fork").Process(
            target=_helper, args=(child, self.conn), daemon=True)
        self.helper.start()
        child.close()

    async def healthcheck(self) -> bool:
        await asyncio.sleep(0.01)
        if self.health == "raise":
            raise RuntimeError("the async probe broke")
        if self.health == "hang":
            await asyncio.sleep(30)
        return self.health != "false"

    def run(
        self,
        action: str = "echo",
        text: str = "",
        paths: list[Path] | None = None,
        doc: File | None = None,
        nums: list[int] | list[float] | None = None,
        seconds: float = 0.0,
    ) -> str:
        if action == "echo":
            return f"type={type(text).__name__} value={text}"
        if action == "paths":
            if paths is None:
                return "type=NoneType"
            return f"count={len(paths)} content=" + ",".join(p.read_text() for p in paths)
        if action == "doc":
            return "type=NoneType" if doc is None else f"read={doc.read().decode()}"
        if action == "nums":
            if not nums:
                return "empty"
            return f"{type(nums[0]).__name__}:{nums[0]}"
        if action == "remember":
            self.seen.append(text)
            return repr(self.seen)
        if action == "ping":
            print("sending ping to the helper")
            self.conn.send(text)
            answer = self.conn.recv()
            print(f"received {answer!r} from the helper")
            return answer
        if action == "exit":
            sys.exit(1)
        if action == "sleep":
            time.sleep(seconds)
            return f"slept {seconds}"
        if action == "health":
            self.health = text
            return f"health={text}"
        raise ValueError(f"unknown action {action!r}")
