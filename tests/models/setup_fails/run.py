from cog import BaseRunner


class Runner(BaseRunner):
    def setup(self) -> None:
        print("about to fail")
        raise RuntimeError("setup exploded")

    def run(self) -> str:
        return "never"
