"""Exceptions shared by the model author's API, the worker and the parent."""


class CancelationException(BaseException):  # noqa: N818 - Cog's public name
    """Raised inside a sync run() when its prediction is canceled.

    A BaseException so that a model's broad `except Exception` does not swallow it.
    """


class DefinitionError(Exception):
    """The model's code cannot be served as written (bad reference, bad signature, ...)."""


class FetchError(Exception):
    """A file input could not be fetched; the message names the input.

    Here rather than in worker/files.py so that the worker only imports the download
    code (urllib, ssl: ~10 ms) for models that take files.
    """
