"""Files that ship with vdbguard: trained weights, measured attack quality, the real-text corpus."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

FIRST_RUN_CACHE = "first-run-cache.json"
"""Entries of the user's cache (path under it -> JSON value) that a first run on a new machine would otherwise compute
before its first page: the hashes of the corpora the packaged models were trained on, the detector's word lists, the
packaged embedder's identity. Made by ``pipelines/build_first_run_cache.py``; tests fail when it goes stale."""


def packaged_file(name: str) -> Path:
    """Where a file shipped in this package is (installed unzipped, so it is a real file)."""
    return Path(__file__).with_name(name)


@functools.cache
def first_run_cache() -> dict[str, Any]:
    path = packaged_file(FIRST_RUN_CACHE)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
