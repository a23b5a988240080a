"""PII detectors, found through the ``vdbguard.detectors`` entry point group."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vdbguard import plugins
from vdbguard.detectors.base import Detection, Detector, build_detector, identity_of
from vdbguard.errors import VdbguardError
from vdbguard.identifiers import DetectorSettings

if TYPE_CHECKING:
    from vdbguard.detectors.shared import DetectorWorker

__all__ = ["DEFAULT_DETECTOR", "Detection", "Detector", "detector_identity", "load_detector"]

DEFAULT_DETECTOR = "presidio"


def detector_identity(name: str = DEFAULT_DETECTOR, settings: DetectorSettings | None = None) -> list[str | int]:
    """The plugin's name and version (and its settings' digest), for keys on what a detector's labels decide
    (verdicts, calibrations): other identifiers or allow lists judge every record again."""
    return identity_of(name, plugins.load("detectors", name).version, settings)


def load_detector(
    name: str = DEFAULT_DETECTOR,
    processes: int = 1,
    early: DetectorWorker | None = None,
    settings: DetectorSettings | None = None,
) -> Detector:
    """The detector plugin ``name``, built with ``settings`` (a user's identifiers and allow lists); with
    ``processes`` > 1, its batches are shared with worker processes once a scan proves big, and an ``early``
    worker already building it detects first (see ``ProcessSharedDetector``)."""
    plugin = plugins.load("detectors", name)
    settings = None if settings is None or settings.is_default else settings
    if settings is not None and not plugin.accepts_settings:
        raise VdbguardError(
            f"detector {name!r} takes no identifiers or allow lists",
            "drop [[identifiers]], [[allow_lists]] and --identifiers, or use the presidio detector",
        )
    if processes <= 1:
        return build_detector(plugin, settings)
    from vdbguard.detectors.shared import ProcessSharedDetector

    return ProcessSharedDetector(plugin, processes, early=early, settings=settings)
