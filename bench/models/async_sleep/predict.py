"""Async model with 16 slots: each run() awaits 10 ms, so 16 clients can reach 1600/s."""

import asyncio

from cog import BaseRunner


class Predictor(BaseRunner):
    async def setup(self) -> None:
        pass

    async def run(self, ms: float = 10.0) -> str:
        await asyncio.sleep(ms / 1000)
        return "ok"
