import asyncio

from cog import BaseRunner


class Runner(BaseRunner):
    """An async run() beside a sync class trainer."""

    async def run(self, text: str = "p") -> str:
        await asyncio.sleep(0)
        return f"predicted {text}"
