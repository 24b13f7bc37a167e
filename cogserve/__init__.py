"""cogserve: serve a Cog-style model over HTTP.

This module is the model author's API; inside cogserve's own processes it is also
importable as `cog`, so models written for Cog run unmodified.
"""

from cogserve.exceptions import CancelationException
from cogserve.sdk.runner import BasePredictor, BaseRunner, Input, batch, concurrent, streaming
from cogserve.sdk.scope import current_scope
from cogserve.sdk.types import (
    AsyncConcatenateIterator,
    BaseModel,
    ConcatenateIterator,
    File,
    Opaque,
    Path,
    Secret,
    Tensor,
)

__version__ = "0.1.0"

__all__ = [
    "AsyncConcatenateIterator",
    "BaseModel",
    "BasePredictor",
    "BaseRunner",
    "CancelationException",
    "ConcatenateIterator",
    "File",
    "Input",
    "Opaque",
    "Path",
    "Secret",
    "Tensor",
    "__version__",
    "batch",
    "concurrent",
    "current_scope",
    "streaming",
]
