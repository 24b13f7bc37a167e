"""An async run() whose slot count comes from cog.yaml `concurrency.max` only."""

import asyncio
import os

from cog import BaseRunner


class Runner(BaseRunner):
    async def run(self, gate: str) -> str:
        while not os.path.exists(gate):  # hold the slot until the test opens the gate
            await asyncio.sleep(0.01)
        return "done"
