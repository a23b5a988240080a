"""The console script's malloc settings: freed blocks go back to the system, and a user's own settings win."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from vdbguard.memory import fix_malloc_thresholds

MMAPPED_AFTER_A_BIG_FREE = """
import ctypes, sys
from vdbguard.memory import fix_malloc_thresholds
class MallInfo2(ctypes.Structure):
    names = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
    _fields_ = [(name, ctypes.c_size_t) for name in names.split()]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype, libc.malloc.restype, libc.free.argtypes = MallInfo2, ctypes.c_void_p, [ctypes.c_void_p]
if sys.argv[1] == "fixed":
    fix_malloc_thresholds()
libc.free(libc.malloc(8 << 20))  # glibc's own threshold rises to the size of this freed block
before = libc.mallinfo2().hblks
block = libc.malloc(1 << 20)
print(libc.mallinfo2().hblks - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
@pytest.mark.parametrize(("setting", "mmapped"), [("fixed", 1), ("glibc's own", 0)])
def test_the_cli_keeps_big_blocks_out_of_the_heap_after_a_big_free(setting: str, mmapped: int) -> None:
    """A block freed to the system cannot linger in a thread's heap: the peak stays flat as the store grows."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("MALLOC_")}
    done = subprocess.run(
        [sys.executable, "-c", MMAPPED_AFTER_A_BIG_FREE, setting], env=env, capture_output=True, text=True, check=True
    )
    assert int(done.stdout) == mmapped


def test_a_users_own_malloc_settings_win(monkeypatch: pytest.MonkeyPatch) -> None:
    import ctypes

    monkeypatch.setenv("MALLOC_ARENA_MAX", "2")
    monkeypatch.setattr(ctypes, "CDLL", lambda _name: pytest.fail("mallopt called despite MALLOC_ARENA_MAX"))
    fix_malloc_thresholds()
