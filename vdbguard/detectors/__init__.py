"""PII detectors, found through the ``vdbguard.detectors`` entry point group."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vdbguard import plugins
from vdbguard.detectors.base import Detection, Detector

if TYPE_CHECKING:
    from vdbguard.detectors.shared import DetectorWorker

__all__ = ["DEFAULT_DETECTOR", "Detection", "Detector", "detector_identity", "load_detector"]

DEFAULT_DETECTOR = "presidio"


def detector_identity(name: str = DEFAULT_DETECTOR) -> list[str | int]:
    """The plugin's name and version, for keys on what a detector's labels decide (verdicts, calibrations)."""
    return [name, plugins.load("detectors", name).version]


def load_detector(name: str = DEFAULT_DETECTOR, processes: int = 1, early: DetectorWorker | None = None) -> Detector:
    """The detector plugin ``name``; with ``processes`` > 1, its batches are shared with worker processes once
    a scan proves big, and an ``early`` worker already building it detects first (see ``ProcessSharedDetector``)."""
    plugin = plugins.load("detectors", name)
    if processes <= 1:
        return plugin()
    from vdbguard.detectors.shared import ProcessSharedDetector

    return ProcessSharedDetector(plugin, processes, early=early)
