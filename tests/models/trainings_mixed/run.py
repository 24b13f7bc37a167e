from cog import BaseRunner


class Runner(BaseRunner):
    """A sync run() beside an async class trainer."""

    def setup(self) -> None:
        print("runner setup")

    def run(self, text: str = "p") -> str:
        return f"predicted {text}"
