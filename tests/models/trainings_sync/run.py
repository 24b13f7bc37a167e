from cog import BaseRunner


class Runner(BaseRunner):
    def run(self, text: str = "p") -> str:
        return f"predicted {text}"
