"""A language model as Cog authors write them: a prompt in, tokens out through
ConcatenateIterator[str], with the sampling inputs published models have.

It echoes what it was given, one word a token, so tests can see every mapping: first
`sys=<system_prompt>` and `temp=<temperature>`, then the prompt's words, at most
`max_tokens` tokens in all. It records Cog's token-count metrics unless the prompt
holds `nometrics`; a prompt holding `slow` yields one token, then waits (for a cancel)
up to 60 s, writing the marker file `<slow word's suffix>` when it is canceled; the
word `fail` makes it raise there.
"""

import os
import time

from cog import BaseRunner, ConcatenateIterator, Input, streaming


class Runner(BaseRunner):
    def setup(self) -> None:
        gate = os.environ.get("OPENAI_TEST_SETUP_GATE")
        limit = time.monotonic() + 60
        while gate and not os.path.exists(gate) and time.monotonic() < limit:
            time.sleep(0.01)

    @streaming
    def run(self, prompt: str, system_prompt: str = "",
            max_tokens: int = Input(default=64, ge=1, le=4096),
            temperature: float = Input(default=0.7, ge=0.0, le=2.0),
            stop_sequences: str = Input(default="", description="comma-separated")
            ) -> ConcatenateIterator[str]:
        words = [f"sys={system_prompt}", f"temp={temperature}", *prompt.split()]
        if stop_sequences:
            words.append(f"stops={stop_sequences}")
        tokens = [word + " " for word in words][:max_tokens]
        if "nometrics" not in prompt:
            self.record_metric("input_token_count", len(prompt.split()))
            self.record_metric("output_token_count", len(tokens))
        for token in tokens:
            if token == "fail ":
                raise RuntimeError("the model failed on purpose")
            if token.startswith("slow"):
                yield token
                self.wait_for_cancel(token.strip().partition(":")[2])
                return
            yield token

    def wait_for_cancel(self, marker: str) -> None:
        try:
            limit = time.monotonic() + 60
            while time.monotonic() < limit:
                time.sleep(0.01)
        except BaseException:
            if marker:
                with open(marker, "w") as fh:
                    fh.write("canceled")
            raise
