"""An Iterator[int] that yields a str on its third item."""

from collections.abc import Iterator

from cog import BaseRunner


class Runner(BaseRunner):
    def run(self) -> Iterator[int]:
        yield 1
        yield 2
        yield "three"  # type: ignore[misc]
