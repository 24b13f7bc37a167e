"""Send the model's own temporary files into its prediction's folder.

A model that writes `tempfile.mkdtemp()` / `NamedTemporaryFile()` and returns the path
leaves files behind that nobody removes. While a prediction runs, `tempfile`'s default
folder is that prediction's folder (a context variable, so concurrent async predictions
each get their own), and the folder goes away with the prediction. Outside a prediction
(setup(), threads the model starts itself) the default stays the worker's TMPDIR, which
the parent points at a per-server folder it removes on exit and on worker restart.

The files of `data:` URL inputs go to a second folder per prediction, in memory
(`take_memory`: under `protocol.MEMORY_DIR_ENV`, which the parent makes on /dev/shm; see
`runtime/folders.py` for why), and only they: downloads and the model's own files can
be any size, so they stay on disk.
"""

from __future__ import annotations

import contextvars
import os
import pathlib
import shutil
import tempfile
from collections.abc import Callable

from cogserve.wire import protocol

Folder = Callable[[], pathlib.Path]

_current: contextvars.ContextVar[Folder | None] = contextvars.ContextVar(
    "cogserve_tempdir", default=None
)
_original = tempfile.gettempdir


def base() -> str:
    """The worker's own TMPDIR: where a folder factory must create its folder."""
    return _original()


_KEEP = 64  # empty folders kept for reuse, per kind: a batch of 32 takes 32 at once
_free: list[pathlib.Path] = []  # list.append/pop are atomic: threads may share them
_free_memory: list[pathlib.Path] = []
_memory: str | None = None  # the parent's memory folder for this worker (`install`)


def take() -> pathlib.Path:
    """A folder for one prediction: an emptied one that an earlier prediction left, or
    a new one. Reuse saves a mkdir and the rmtree walk per prediction with a file input
    (on the bench's ext4, 0.4-1 ms of the worker's CPU per prediction, issue 35)."""
    try:
        return _free.pop()
    except IndexError:
        return pathlib.Path(tempfile.mkdtemp(prefix=protocol.PREDICTION_DIR_PREFIX, dir=base()))


def take_memory() -> pathlib.Path | None:
    """A folder in memory for one prediction's data: URL inputs, reused as `take`'s are;
    None when the worker has no memory folder (or it cannot hold another folder)."""
    if _memory is None:
        return None
    try:
        return _free_memory.pop()
    except IndexError:
        pass
    try:
        return pathlib.Path(tempfile.mkdtemp(prefix=protocol.PREDICTION_DIR_PREFIX,
                                              dir=_memory))
    except OSError:
        return None


def release(folder: pathlib.Path) -> None:
    """A prediction is over: remove its files, and keep the folder for the next one. A
    folder that holds a folder (the model's own), or that cannot be emptied, is removed
    whole instead, as is one past the number kept."""
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    raise IsADirectoryError(entry.path)
                os.unlink(entry.path)
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)
        return
    kept = _free_memory if _memory is not None and str(folder.parent) == _memory else _free
    if len(kept) < _KEEP:
        kept.append(folder)
    else:
        shutil.rmtree(folder, ignore_errors=True)


def _gettempdir() -> str:
    folder = _current.get()
    return _original() if folder is None else str(folder())


def _gettempdirb() -> bytes:
    return os.fsencode(_gettempdir())


def install() -> None:
    """Make tempfile's default folder follow `bind` (the worker calls it once, at start;
    until a prediction binds a folder, the default stays the worker's TMPDIR), and take
    the memory folder from the environment (the model's code need not see it)."""
    global _memory
    _memory = os.environ.pop(protocol.MEMORY_DIR_ENV, None) or None
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
