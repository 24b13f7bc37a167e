"""glibc's malloc, set for processes that allocate and free buffers of megabytes per request.

A 4 MB tensor body or a 7 MiB JSON document is read, joined, parsed, written to the
worker and freed, once per request. With glibc's defaults each of those buffers is
either mapped fresh (above the mmap threshold, 128 KiB until a freed mapping raises it)
or carved from the top of the heap and handed back to the kernel when freed (the top
above the trim threshold, 128 KiB): either way the next request's buffer is new memory,
and the kernel faults in and zeroes every page of it again. Measured on scenario 8b
(V2, FP32[1M] binary body, one client): page faults and their zeroing were ~30% of the
parent's CPU, and with both thresholds at 32 MiB the parent's CPU per request went from
7.7 to 3.3 ms and the latency from 8.9 to 4.9 ms (bench/FINDINGS.md, eighth session).

The price is memory: up to `THRESHOLD` of freed memory stays with the process at the top
of its heap (and a buffer below it is carved from the heap, not mapped), instead of going
back to the kernel at once. For a model server that is a fixed few tens of MiB.

Set in the HTTP parent when it starts serving and in the worker before it imports the
model. A user who set glibc's own variables (`MALLOC_MMAP_THRESHOLD_`,
`MALLOC_TRIM_THRESHOLD_`, `MALLOC_TOP_PAD_`, or `glibc.malloc.*` in `GLIBC_TUNABLES`)
keeps them: nothing is changed then. Elsewhere than on glibc, nothing is done.
"""

from __future__ import annotations

import os
import sys

from cogserve.process.envvars import malloc_set_by_user

THRESHOLD = 32 * 1024 * 1024  # glibc's upper bound for M_MMAP_THRESHOLD on 64-bit
_M_TRIM_THRESHOLD = -1  # mallopt's parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds to `THRESHOLD`; True if both took."""
    if not sys.platform.startswith("linux") or malloc_set_by_user():
        return False
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):  # type: ignore[union-attr]
            return False
    except (ValueError, OSError, AttributeError):  # not glibc (musl has no such name)
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, THRESHOLD)
                    and libc.mallopt(_M_TRIM_THRESHOLD, THRESHOLD))
    except (OSError, AttributeError):
        return False
