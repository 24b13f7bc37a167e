"""A streaming token model: ConcatenateIterator[str] with @streaming."""

from cog import BaseRunner, ConcatenateIterator, streaming


class Runner(BaseRunner):
    @streaming
    def run(self, prompt: str = "a b c") -> ConcatenateIterator[str]:
        for word in prompt.split():
            yield word + " "
