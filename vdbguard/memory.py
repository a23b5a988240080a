"""How the process hands memory back to the system: the console script sets it before any work starts."""

from __future__ import annotations

import ctypes
import os
import sys

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
MALLOC_THRESHOLD = 128 << 10


def fix_malloc_thresholds() -> None:
    """Memory that returns to the system once freed, so a scan's peak stays flat as the store grows. glibc raises
    its mmap threshold to the largest block freed so far; the buffers LanceDB, Arrow and numpy free then stay in
    the heaps of the threads that freed them (BENCHMARKS.md, "peak memory and glibc's thresholds": 25-42% of the
    peak of a scan that reads pages, for about 5% of a first scan's time). A user's own ``MALLOC_*`` settings win,
    and a C library other than glibc is left as it is."""
    if not sys.platform.startswith("linux") or any(name.startswith("MALLOC_") for name in os.environ):
        return
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018  # glibc's own symbol: other libcs read these parameters differently
    except (OSError, AttributeError):
        return
    libc.mallopt(M_MMAP_THRESHOLD, MALLOC_THRESHOLD)
    libc.mallopt(M_TRIM_THRESHOLD, MALLOC_THRESHOLD)
