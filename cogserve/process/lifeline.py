"""Children of cogserve that must not outlive it: the worker, and uv building an environment.

Both run in a process group of their own (so their own children can be ended with them),
so a signal to cogserve's group no longer reaches them; without this an orphaned worker
could keep running a long run(), or uv keep installing, after cogserve is gone.
"""

from __future__ import annotations

import os
import sys


def die_with_parent() -> None:
    """Ask Linux for SIGKILL when the parent dies (even by SIGKILL itself).

    Called first thing in the child (the worker's main(), or a preexec_fn).
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    parent = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
