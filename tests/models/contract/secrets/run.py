"""A Secret input: redacted in str()/repr() and in the echoed input."""

from cog import BaseRunner, Secret


class Runner(BaseRunner):
    def run(self, token: Secret, note: str = "n") -> str:
        print(f"token is {token} / {token!r}")
        return f"length {len(token.get_secret_value())} {note}"
