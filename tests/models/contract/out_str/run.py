from cog import BaseRunner


class Runner(BaseRunner):
    def run(self, text: str = "hi") -> str:
        return f"hello {text}\nsecond line"
