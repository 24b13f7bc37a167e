"""`cogserve serve --reload`: restart the workers when the model's code changes.

watchfiles (installed with uvicorn[standard]) reports changes in the model folder; a
batch that touches a `.py` file or `cog.yaml` makes `Service.reload` restart every
worker once its in-flight predictions have finished (new code, setup() again). A model
that no longer imports shows its error in /health-check, and the loop keeps waiting
for the next change.

Before the restart the bytecode cache of every changed file goes: Python trusts a
`.pyc` whose recorded source mtime (whole seconds) and size match, so an edit that keeps
the size and lands in the same second as the previous one would run the old code.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import pathlib

from watchfiles import awatch

from cogserve.runtime.service import Service

log = logging.getLogger("cogserve")

SKIP_DIRS = frozenset({"__pycache__", ".git", ".venv", "node_modules", ".cog"})


def relevant(path: str) -> bool:
    """A change that can alter the model: Python source or cog.yaml, outside caches."""
    p = pathlib.PurePath(path)
    if SKIP_DIRS.intersection(p.parts):
        return False
    return p.suffix == ".py" or p.name == "cog.yaml"


async def watch(service: Service, stop: asyncio.Event) -> None:
    directory = service.config.directory
    log.info("--reload: watching %s for changes to .py files and cog.yaml", directory)
    async for changes in awatch(directory, stop_event=stop, debounce=200, step=50,
                                watch_filter=lambda _change, path: relevant(path)):
        names = sorted({pathlib.Path(path).name for _, path in changes})
        log.info("--reload: %s changed; restarting the worker%s", ", ".join(names),
                 "s" if service.worker_count > 1 else "")
        for _, path in changes:
            drop_bytecode(path)
        await service.reload()


def drop_bytecode(path: str) -> None:
    """Remove the cached bytecode of a changed source file, so the next import compiles it."""
    if not path.endswith(".py"):
        return
    with contextlib.suppress(OSError, ValueError):
        pathlib.Path(importlib.util.cache_from_source(path)).unlink(missing_ok=True)
