import asyncio

from cog import BaseRunner, Input


class Runner(BaseRunner):
    async def setup(self) -> None:
        await asyncio.sleep(0)

    async def run(self, text: str = "x", sleep: float = Input(default=0.0, ge=0)) -> str:
        print(f"begin {text}")
        await asyncio.sleep(sleep)
        print(f"finish {text}")
        return text
