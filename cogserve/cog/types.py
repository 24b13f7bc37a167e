"""`cog.types`: the value types a model declares, and the helpers Cog keeps beside them;
older SDKs' names of this module (`Weights`, ...) come from `cogserve.cog.legacy`."""

from cogserve.sdk.types import (
    FILENAME_ILLEGAL_CHARS,
    FILENAME_MAX_LENGTH,
    AsyncConcatenateIterator,
    ConcatenateIterator,
    File,
    Item,
    Path,
    Secret,
    URLFile,
    URLPath,
    get_filename,
)

__all__ = ["FILENAME_ILLEGAL_CHARS", "FILENAME_MAX_LENGTH", "AsyncConcatenateIterator",
           "ConcatenateIterator", "File", "Item", "Path", "Secret", "URLFile", "URLPath",
           "get_filename"]


def __getattr__(name: str) -> object:
    """Names of older SDKs (`Weights`, `Input`, ...), each with its deprecation line."""
    if name.startswith("__"):  # the import system's questions (`__path__`, ...)
        raise AttributeError(f"module 'cog.types' has no attribute {name!r}")
    from cogserve.cog.legacy import old_attribute

    return old_attribute("cog.types", name)
