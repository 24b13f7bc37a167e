import asyncio

from cog import Input


class Trainer:
    def setup(self) -> None:
        print("trainer setup")
        self.base = "base"

    async def train(self, text: str, sleep: float = Input(default=0.0, ge=0)) -> str:
        print(f"training {text}")
        try:
            await asyncio.sleep(sleep)
        except asyncio.CancelledError:
            print("training canceled")
            raise
        return f"{self.base} trained {text}"
