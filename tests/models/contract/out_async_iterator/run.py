"""An async generator run() with AsyncIterator output, plus async setup()."""

import asyncio
from collections.abc import AsyncIterator

from cog import BaseRunner


class Runner(BaseRunner):
    async def setup(self) -> None:
        await asyncio.sleep(0)
        self.prefix = "tok"
        print("async setup done")

    async def run(self, n: int = 3) -> AsyncIterator[str]:
        for i in range(n):
            await asyncio.sleep(0)
            yield f"{self.prefix}{i}"
