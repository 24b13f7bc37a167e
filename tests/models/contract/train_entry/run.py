from cog import BaseRunner


class Runner(BaseRunner):
    def run(self, prompt: str) -> str:
        return prompt
