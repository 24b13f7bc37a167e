"""A wheel of the running cogserve, to install the same cogserve into a model's environment.

The worker needs cogserve inside the model's environment (its worker code and the `cog`
alias). Installing "cogserve==VERSION" from an index fails for a local checkout or an
unreleased version, and installing the checkout path needs a build backend and seconds.
So the wheel is written from the files of the cogserve that is running (the package
folder as it is now, with the installed distribution's METADATA and entry points): the
same code whatever the way cogserve was installed, in a few milliseconds, offline. Its
digest is part of every environment's key, so a changed checkout gets fresh environments.
"""

from __future__ import annotations

import base64
import hashlib
import os
import pathlib
import re
import tempfile
from functools import cache
from typing import TYPE_CHECKING

import cogserve

if TYPE_CHECKING:
    import importlib.metadata

PACKAGE = pathlib.Path(cogserve.__file__).parent


def _package_files() -> list[pathlib.Path]:
    return sorted(p for p in PACKAGE.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


@cache
def cogserve_id() -> str:
    """Version and a digest of cogserve's files: changes when its source changes."""
    digest = hashlib.sha256()
    for path in _package_files():
        digest.update(str(path.relative_to(PACKAGE)).encode() + b"\0")
        digest.update(path.read_bytes())
    return f"{cogserve.__version__}+{digest.hexdigest()[:16]}"


# Dependencies of the parent only: left out of the wheel installed into model environments.
PARENT_ONLY = re.compile(r"^uv\b(?![-.\w])")


def requirements() -> list[str]:
    """cogserve's own dependencies (without extras) that the worker's environment gets."""
    import importlib.metadata  # here: 10+ ms to import, and a start that reuses never needs it

    return [r for r in importlib.metadata.requires("cogserve") or []
            if "extra ==" not in r and not PARENT_ONLY.match(r)]


def _metadata(dist: importlib.metadata.Distribution) -> str:
    """METADATA for the wheel, from whichever form the installed metadata has (a dist-info,
    or the egg-info of a checkout), without the parent-only dependencies."""
    meta = dist.metadata
    lines = ["Metadata-Version: 2.1", f"Name: {meta['Name']}", f"Version: {meta['Version']}"]
    if meta["Requires-Python"]:
        lines.append(f"Requires-Python: {meta['Requires-Python']}")
    lines += [f"Provides-Extra: {extra}" for extra in meta.get_all("Provides-Extra") or []]
    lines += [f"Requires-Dist: {req}" for req in dist.requires or []
              if not PARENT_ONLY.match(req)]
    return "\n".join(lines) + "\n"


def ensure_wheel(folder: pathlib.Path) -> pathlib.Path:
    """The wheel for `cogserve_id()` in `folder`, written once (atomically)."""
    import importlib.metadata
    import zipfile

    version = importlib.metadata.version("cogserve")
    target = folder / cogserve_id() / f"cogserve-{version}-py3-none-any.whl"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    dist = importlib.metadata.distribution("cogserve")
    info = f"cogserve-{version}.dist-info"
    entries: list[tuple[str, bytes]] = [
        (f"cogserve/{p.relative_to(PACKAGE).as_posix()}", p.read_bytes())
        for p in _package_files()
    ]
    entries.append((f"{info}/METADATA", _metadata(dist).encode()))
    entry_points = dist.read_text("entry_points.txt")
    if entry_points:
        entries.append((f"{info}/entry_points.txt", entry_points.encode()))
    entries.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: cogserve\n"
                                     b"Root-Is-Purelib: true\nTag: py3-none-any\n"))
    record = [f"{name},sha256={_b64digest(data)},{len(data)}" for name, data in entries]
    record.append(f"{info}/RECORD,,")
    entries.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".part")
    try:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in entries:
                zf.writestr(name, data)
        os.replace(tmp, target)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _b64digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
