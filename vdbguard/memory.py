"""How the process hands memory back to the system: the console script sets it before any work starts."""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
from collections.abc import Iterator

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
MALLOC_THRESHOLD = 128 << 10
MODEL_THRESHOLD = 64 << 20  # while a model runs: its activations come from the heap, freed and reused


class _Thresholds:
    """The thresholds this process fixed (None: glibc's own, left alone), and how many model passes run now."""

    libc: ctypes.CDLL | None = None
    running = 0
    lock = threading.Lock()


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
    _set(libc, MALLOC_THRESHOLD)
    _Thresholds.libc = libc


def _set(libc: ctypes.CDLL, threshold: int) -> None:
    libc.mallopt(M_MMAP_THRESHOLD, threshold)
    libc.mallopt(M_TRIM_THRESHOLD, threshold)


@contextlib.contextmanager
def heap_for_a_model() -> Iterator[None]:
    """glibc's heap, not a fresh mapping, for each block while a model runs here, where the CLI fixed the thresholds:
    each of its activations mapped anew and unmapped as it was freed, the PERSON tagger ran far slower (and the cold
    scan of the demo store with it; BENCHMARKS.md, "The user's command"). Once no pass runs, the thresholds come back
    and the free heap goes back to the system."""
    libc = _Thresholds.libc
    if libc is None:
        yield
        return
    with _Thresholds.lock:
        _Thresholds.running += 1
        if _Thresholds.running == 1:
            _set(libc, MODEL_THRESHOLD)
    try:
        yield
    finally:
        with _Thresholds.lock:
            _Thresholds.running -= 1
            if _Thresholds.running == 0:
                _set(libc, MALLOC_THRESHOLD)
                libc.malloc_trim(0)  # what the pass freed goes back to the system now, not at a later free
