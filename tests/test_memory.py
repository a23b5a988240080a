"""The console script's malloc settings: freed blocks go back to the system, and a user's own settings win."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from vdbguard.memory import fix_malloc_thresholds

MALLINFO = """
import ctypes, sys
class MallInfo2(ctypes.Structure):
    names = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
    _fields_ = [(name, ctypes.c_size_t) for name in names.split()]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype, libc.malloc.restype, libc.free.argtypes = MallInfo2, ctypes.c_void_p, [ctypes.c_void_p]
"""
MMAPPED_AFTER_A_BIG_FREE = (
    MALLINFO
    + """
from vdbguard.memory import fix_malloc_thresholds
if sys.argv[1] == "fixed":
    fix_malloc_thresholds()
libc.free(libc.malloc(8 << 20))  # glibc's own threshold rises to the size of this freed block
before = libc.mallinfo2().hblks
block = libc.malloc(1 << 20)
print(libc.mallinfo2().hblks - before)
"""
)


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


MMAPPED_IN_AND_AFTER_A_MODELS_PASS = (
    MALLINFO
    + """
from vdbguard.memory import fix_malloc_thresholds, heap_for_a_model
fix_malloc_thresholds()

def mmapped(size):
    before = libc.mallinfo2().hblks
    block = libc.malloc(size)
    count = libc.mallinfo2().hblks - before
    libc.free(block)
    return count

with heap_for_a_model():
    with heap_for_a_model():  # another thread's pass, say
        pass
    during = mmapped(8 << 20)
print(during, mmapped(8 << 20))
"""
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_models_pass_reuses_the_heap_and_the_fixed_thresholds_come_back_after_it() -> None:
    """A model's activations mapped anew for every operation cost the tagger 40% more CPU; the peak of a scan that
    reads pages stays the fixed thresholds' outside the pass."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("MALLOC_")}
    done = subprocess.run(
        [sys.executable, "-c", MMAPPED_IN_AND_AFTER_A_MODELS_PASS], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["0", "1"]
