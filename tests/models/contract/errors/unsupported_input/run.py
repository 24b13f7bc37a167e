"""set[int] is not an input type."""

from cog import BaseRunner


class Runner(BaseRunner):
    def run(
        self,
        ok: str,
        tags: set[int],
    ) -> str:
        return ok
