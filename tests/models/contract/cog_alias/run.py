"""Imports every name a Cog model uses from `cog` and reports where they came from."""

import subprocess
import sys

import cog
from cog import (
    BaseModel,
    BaseRunner,
    CancelationException,
    ConcatenateIterator,
    Input,
    Path,
    Secret,
    concurrent,
    current_scope,
    streaming,
)


class Runner(BaseRunner):
    def run(self, probe: str = Input(default="")) -> dict:
        child = ""
        if probe:  # what a child process gets for `import cog`
            child = subprocess.run([sys.executable, "-c", probe], capture_output=True,
                                   text=True).stdout.strip()
        names = [BaseModel, BaseRunner, CancelationException, ConcatenateIterator, Input, Path,
                 Secret, concurrent, current_scope, streaming]
        return {
            "cog_module": cog.__name__,
            "modules": sorted({n.__module__.split(".")[0] for n in names}),
            "pydantic_loaded": "pydantic" in sys.modules,
            "child": child,
        }
