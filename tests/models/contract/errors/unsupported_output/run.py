"""set is not an output type."""

from cog import BaseRunner


class Runner(BaseRunner):
    def run(self, ok: str) -> set:
        return {ok}
