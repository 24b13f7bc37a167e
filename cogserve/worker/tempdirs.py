"""Send the model's own temporary files into its prediction's folder.

A model that writes `tempfile.mkdtemp()` / `NamedTemporaryFile()` and returns the path
leaves files behind that nobody removes. While a prediction runs, `tempfile`'s default
folder is that prediction's folder (a context variable, so concurrent async predictions
each get their own), and the folder goes away with the prediction. Outside a prediction
(setup(), threads the model starts itself) the default stays the worker's TMPDIR, which
the parent points at a per-server folder it removes on exit and on worker restart.
"""

from __future__ import annotations

import contextvars
import os
import pathlib
import tempfile
from collections.abc import Callable

Folder = Callable[[], pathlib.Path]

_current: contextvars.ContextVar[Folder | None] = contextvars.ContextVar(
    "cogserve_tempdir", default=None
)
_original = tempfile.gettempdir


def base() -> str:
    """The worker's own TMPDIR: where a folder factory must create its folder."""
    return _original()


def _gettempdir() -> str:
    folder = _current.get()
    return _original() if folder is None else str(folder())


def _gettempdirb() -> bytes:
    return os.fsencode(_gettempdir())


def install() -> None:
    """Make tempfile's default folder follow `bind` (the worker calls it once, at start;
    until a prediction binds a folder, the default stays the worker's TMPDIR)."""
    # tempfile's own functions look these names up in the module, so this covers
    # mkstemp, mkdtemp, NamedTemporaryFile, TemporaryDirectory and SpooledTemporaryFile.
    tempfile.gettempdir = _gettempdir
    tempfile.gettempdirb = _gettempdirb


def bind(folder: Folder) -> contextvars.Token[Folder | None]:
    """Make `folder()` the default for the current context.

    `folder` creates its folder on first use, with an explicit `dir=base()` (it is called
    from inside tempfile, so it must not ask tempfile for the default).
    """
    return _current.set(folder)


def unbind(token: contextvars.Token[Folder | None]) -> None:
    _current.reset(token)
