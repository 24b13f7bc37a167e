"""An async @streaming model yielding a ConcatenateIterator, gated like `stream`."""

import asyncio
import os

from cog import AsyncConcatenateIterator, BaseRunner, streaming


class Runner(BaseRunner):
    @streaming
    async def run(self, n: int = 3, gate: str = "") -> AsyncConcatenateIterator[str]:
        for k in range(n):
            if gate and k == 1:
                for _ in range(2000):
                    if os.path.exists(gate):
                        break
                    await asyncio.sleep(0.01)
                else:
                    yield "gate-timeout"
                    return
            print(f"async log {k}")
            yield f"a{k} "
