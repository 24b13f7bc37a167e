import time

from cog import BaseRunner, Input


class Runner(BaseRunner):
    def setup(self) -> None:
        self.greeting = "hello"

    def run(
        self,
        name: str = Input(description="Who to greet", default="world"),
        times: int = Input(description="How many times", default=1, ge=1, le=10),
        seconds: float = Input(description="Seconds to wait first (time to try a cancel)",
                               default=0, ge=0, le=60),
    ) -> str:
        time.sleep(seconds)
        return " ".join([f"{self.greeting} {name}"] * times)
