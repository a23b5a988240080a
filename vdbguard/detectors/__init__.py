"""PII detectors, found through the ``vdbguard.detectors`` entry point group."""

from __future__ import annotations

from vdbguard import plugins
from vdbguard.detectors.base import Detection, Detector

__all__ = ["DEFAULT_DETECTOR", "Detection", "Detector", "load_detector"]

DEFAULT_DETECTOR = "presidio"


def load_detector(name: str = DEFAULT_DETECTOR) -> Detector:
    return plugins.load("detectors", name)()
