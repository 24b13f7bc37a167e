"""A plain function as the runner."""

from cog import Input


def run(a: int = Input(ge=0), b: int = 2) -> int:
    return a + b
