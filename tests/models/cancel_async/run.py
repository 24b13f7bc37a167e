import asyncio

from cog import BaseRunner, Input


class Runner(BaseRunner):
    """An async run() that cleans up on cancel (and re-raises), or swallows it."""

    async def run(self, text: str = "x", sleep: float = Input(default=0.0, ge=0),
                  swallow: bool = False) -> str:
        print(f"start {text}")
        try:
            await asyncio.sleep(sleep)
        except asyncio.CancelledError:
            print(f"cleanup {text}")
            if not swallow:
                raise
            await asyncio.sleep(3600)  # ignores the cancel: only the grace period ends it
        print(f"end {text}")
        return text.upper()
