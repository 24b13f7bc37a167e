"""The default 20 breaks the input's own le=10."""

from cog import BaseRunner, Input


class Runner(BaseRunner):
    def run(
        self,
        text: str = "x",
        steps: int = Input(default=20, ge=1, le=10),
    ) -> str:
        return text * steps
