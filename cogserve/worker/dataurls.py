"""Write a `data:` URL file input into its prediction's folder (the one in memory, when the
worker has one: `tempdirs.take_memory`), in the calling thread.

A data URL needs no network, so it needs none of what a download does (a pool thread,
the prediction's Transfers and its deadline timer, urllib): decoding it where run()'s
inputs are prepared saved the worker a thread start and two thread hand-offs per file
input (issue 35). `files.Fetcher.fetch` hands data URLs here too.
No urllib.request: a worker that gets a data URL imports this. pybase64 decodes at
SIMD speed: 3 us for a 30 KB image against the standard library's 96.
"""

from __future__ import annotations

import binascii
import functools
import mimetypes
import os
import pathlib
import urllib.parse
from collections.abc import Callable

import pybase64

from cogserve.exceptions import FetchError


def write(url: str, dest: pathlib.Path, label: str, index: int | None,
          spare: Callable[[], pathlib.Path] | None = None) -> pathlib.Path:
    """Decode `url` (a data: URL) into a new file in the folder `dest`; its path.

    The file is named `input` (`input.N` for item N of a list) with the extension of
    the URL's media type, as a download without a name is. When `dest` is full (a
    folder in memory: a container's /dev/shm may hold 64 MiB), the file goes to the
    folder `spare()` gives instead (as it does for any other error writing there)."""
    header, sep, payload = url[5:].partition(",")
    if not sep:
        raise FetchError(f"input {label}: malformed data URL (no comma)")
    parts = header.split(";")
    try:
        if "base64" in parts[1:]:
            data = pybase64.b64decode(payload, validate=True)
        else:
            data = urllib.parse.unquote_to_bytes(payload)
    except (binascii.Error, ValueError) as exc:
        raise FetchError(f"input {label}: malformed data URL: {exc}") from None
    name = (f"input.{index}" if index is not None else "input") + extension(parts[0])
    try:
        return _store(data, dest, name)
    except OSError:
        if spare is None:
            raise
    return _store(data, spare(), name)


def _store(data: bytes, dest: pathlib.Path, name: str) -> pathlib.Path:
    """`data` in a new file `dest/name` (or the first `numbered` name not taken), made
    with O_EXCL: a name free in the prediction's own folder, the usual case, costs no
    stat() before the open."""
    target = dest / name
    n = 0
    while True:
        try:
            out = open(target, "xb")
        except FileExistsError:
            n += 1
            target = dest / numbered(name, n)
            continue
        break
    try:
        with out:
            out.write(data)
    except OSError:
        target.unlink(missing_ok=True)
        raise
    return target


@functools.lru_cache(maxsize=64)
def extension(mime: str) -> str:
    """The file extension of a media type ('' if unknown); `text/plain` when empty."""
    return mimetypes.guess_extension(mime or "text/plain") or ""


def unique(dest: pathlib.Path, name: str) -> pathlib.Path:
    """`dest/name`, or the first `numbered` name not taken."""
    target = dest / name
    n = 0
    while target.exists():
        n += 1
        target = dest / numbered(name, n)
    return target


def numbered(name: str, n: int) -> str:
    """`stem.N.suffix`: the name of the Nth file after the first of one name."""
    stem, suffix = os.path.splitext(name)
    return f"{stem}.{n}{suffix}"
