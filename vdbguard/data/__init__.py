"""Files that ship with vdbguard: trained weights, measured attack quality, the real-text corpus."""

from __future__ import annotations

from pathlib import Path


def packaged_file(name: str) -> Path:
    """Where a file shipped in this package is (installed unzipped, so it is a real file)."""
    return Path(__file__).with_name(name)
