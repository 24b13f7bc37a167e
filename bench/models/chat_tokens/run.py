"""A language model's shape with no model behind it: `max_tokens` short tokens."""

from cog import BaseRunner, ConcatenateIterator, Input, streaming


class Runner(BaseRunner):
    @streaming
    def run(self, prompt: str = "", max_tokens: int = Input(default=10000, ge=1)
            ) -> ConcatenateIterator[str]:
        for k in range(max_tokens):
            yield f" tok{k}"
