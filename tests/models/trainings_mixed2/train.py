import time

from cog import CancelationException, Input


class Trainer:
    def setup(self) -> None:
        print("trainer setup")

    def train(self, text: str, busy: float = Input(default=0.0, ge=0)) -> str:
        print(f"training {text}")
        try:
            deadline = time.time() + busy
            while time.time() < deadline:
                pass
        except CancelationException:
            print("training canceled")
            raise
        return f"trained {text}"
