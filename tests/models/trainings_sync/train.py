import time

from cog import CancelationException, Input


def train(text: str, steps: int = Input(default=2, ge=1), sleep: float = 0.0) -> str:
    """A plain function trainer: no setup()."""
    try:
        for i in range(steps):
            print(f"step {i}")
            time.sleep(sleep)
    except CancelationException:
        print("training canceled")
        raise
    return f"trained {text} x{steps}"
