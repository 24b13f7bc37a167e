"""A @streaming token stream: `n` short tokens, yielded as fast as the loop runs."""

from cog import BaseRunner, ConcatenateIterator, Input, streaming


class Predictor(BaseRunner):
    @streaming
    def run(self, n: int = Input(default=10000, ge=1)) -> ConcatenateIterator[str]:
        for k in range(n):
            yield f" tok{k}"
