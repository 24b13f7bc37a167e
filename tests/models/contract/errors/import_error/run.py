"""Importing the model fails."""

import json

import no_such_module_for_cogserve  # noqa: F401
from cog import BaseRunner


class Runner(BaseRunner):
    def run(self) -> str:
        return json.dumps(1)
