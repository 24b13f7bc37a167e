"""`cog.types`: the value types a model declares, and the helpers Cog keeps beside them."""

from cogserve.types import (
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
