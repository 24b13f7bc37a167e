from cog import BaseRunner, Input


class Trainer(BaseRunner):
    """A trainer class with setup(): setup() runs once, before the first training."""

    def setup(self) -> None:
        self.base = "base-weights"

    def train(self, text: str, steps: int = Input(default=2, ge=1)) -> str:
        for i in range(steps):
            print(f"step {i}")
        return f"trained {text} x{steps} from {self.base}"
