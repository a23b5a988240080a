"""The detector benchmark's real-text sources (``benchmarks/detector_real.py``), for the trainers here.

The PERSON trainers draw their silver data from the benchmark's ``train`` sources (``--split train --write-train``)
and the tagger also places that split's names in frames of its own, so both read one list of sources, split the same
way. This module is the one place a pipeline reaches into ``benchmarks/``: ``from silver_sources import
detector_real``.
"""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(1, str(BENCHMARKS))  # after pipelines/ itself; detector_real imports its neighbours by name

import detector_real  # noqa: E402

__all__ = ["detector_real"]
