"""Optional is not allowed as the return type."""

from typing import Optional

from cog import BaseRunner


class Runner(BaseRunner):
    def run(self, text: str) -> Optional[str]:
        return text
