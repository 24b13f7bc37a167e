import asyncio

from cog import BaseRunner, Input

SETUPS = []


class Model(BaseRunner):
    """One class for run() and train(): one instance, one setup()."""

    async def setup(self) -> None:
        SETUPS.append(1)
        self.weights = "w0"
        print("model setup")

    async def run(self, text: str = "p") -> str:
        return f"{self.weights}:{text}:setups={len(SETUPS)}"

    async def train(self, text: str, sleep: float = Input(default=0.0, ge=0)) -> str:
        print(f"training {text}")
        try:
            await asyncio.sleep(sleep)
        except asyncio.CancelledError:
            print("training canceled")
            raise
        self.weights = f"w-{text}"
        return f"trained {text} setups={len(SETUPS)}"
