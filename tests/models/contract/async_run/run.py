"""async setup() and async run() with @concurrent."""

import asyncio

from cog import BaseRunner, concurrent


class Runner(BaseRunner):
    async def setup(self) -> None:
        self.ready = True

    @concurrent(max=4)
    async def run(self, text: str = "x", delay: float = 0.0) -> str:
        await asyncio.sleep(delay)
        return f"async {text} {self.ready}"
