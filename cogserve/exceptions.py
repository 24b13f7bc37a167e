"""Exceptions shared by the model author's API, the worker and the parent."""


class CancelationException(BaseException):  # noqa: N818 - Cog's public name
    """Raised inside a sync run() when its prediction is canceled.

    A BaseException so that a model's broad `except Exception` does not swallow it.
    """


class DefinitionError(Exception):
    """The model's code cannot be served as written (bad reference, bad signature, ...)."""
