"""A plain-function training entry point named by cog.yaml `train:`."""

from cog import Input


def train(epochs: int = Input(default=1, ge=1, description="passes over the data")) -> str:
    return f"trained {epochs}"
