import time

from cog import BaseRunner


class Runner(BaseRunner):
    def setup(self) -> None:
        print("slow setup begins")
        time.sleep(30)

    def run(self) -> str:
        return "late"
