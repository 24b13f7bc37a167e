from cog import BaseRunner, Input


class Runner(BaseRunner):
    def setup(self) -> None:
        self.greeting = "hello"

    def run(
        self,
        name: str = Input(description="Who to greet", default="world"),
        times: int = Input(description="How many times", default=1, ge=1, le=10),
    ) -> str:
        return " ".join([f"{self.greeting} {name}"] * times)
