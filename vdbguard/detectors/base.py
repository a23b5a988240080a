"""A detector finds PII in text: what inversion recovered, or the stored document itself."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from vdbguard.identifiers import DetectorSettings
from vdbguard.pii import AnyPiiType
from vdbguard.reports.schema import Severity


@dataclass(frozen=True)
class Detection:
    pii_type: AnyPiiType
    value: str
    start: int
    end: int
    score: float
    recognizer: str


@dataclass(frozen=True)
class Reading:
    """A text's detections; ``unsure``: the detector nearly reported PII it did not. Owner-side calibration leaves the
    records it labelled clean and is unsure of out of what sets its cutoffs: a missed person, counted clean, raised
    them. ``doubt``: how nearly, where the detector can say (its tagger's highest probability of a name for a word
    outside every name it reported); redaction reads a text again only past a small one."""

    detections: list[Detection]
    unsure: bool = False
    doubt: float = 0.0


class Detector(ABC):
    name: ClassVar[str]
    version: ClassVar[int] = 1  # raised when a text can get other detections: verdicts keyed on it are redone
    max_chars: ClassVar[int | None] = None  # read per text; the rest is not examined
    cutoff: ClassVar[float] = 0.0  # the score a detection needs to be reported
    accepts_settings: ClassVar[bool] = False  # built with DetectorSettings (a user's identifiers, allow lists)
    uses_torch: ClassVar[bool] = False  # a worker process blocks torch's import (seconds, hundreds of MiB) unless set
    settings: DetectorSettings | None = None

    @abstractmethod
    def detect(self, text: str) -> list[Detection]: ...

    def identity(self) -> list[str | int]:
        """What decides this detector's detections, for keys on what they decide (verdicts, calibrations)."""
        return identity_of(self.name, self.version, self.settings)

    def built_in_identity(self) -> list[str | int]:
        """What decides its detections of the built-in types, for a verdict fitted on those alone: a user's own
        types never change it, so a new identifier does not refit the packaged verdict."""
        digest = self.settings.built_in_digest() if self.settings is not None else None
        return [self.name, self.version] + ([digest] if digest else [])

    def severities(self) -> Mapping[str, Severity]:
        """Base severity of each type the settings define (``CUSTOM:NAME``); the built-in ones have theirs."""
        return {} if self.settings is None else self.settings.severities()

    @classmethod
    def loaded_here(cls) -> bool:
        """True when this process has loaded what the detector needs, so making one costs next to nothing: a scan
        then detects here rather than start a worker process that loads it again."""
        return False

    def detect_whole(self, text: str) -> list[Detection]:
        """PII in all of ``text``, or ValueError: the write path must not pass on a tail nobody read."""
        self._check_whole(text)
        return self.detect(text)

    def detect_whole_many(self, texts: Sequence[str]) -> list[list[Detection]]:
        """``detect_whole`` for each text, batched as ``detect_many`` batches."""
        return [reading.detections for reading in self.read_whole_many(texts)]

    def read_whole_many(self, texts: Sequence[str]) -> list[Reading]:
        """``read_many`` of all of each text, or ValueError as ``detect_whole`` raises it."""
        for text in texts:
            self._check_whole(text)
        return self.read_many(texts)

    def _check_whole(self, text: str) -> None:
        if self.max_chars is not None and len(text) > self.max_chars:
            raise ValueError(
                f"is {len(text):,} characters and {self.name} examines at most {self.max_chars:,}: "
                "split it into chunks before embedding"
            )

    def detect_many(self, texts: Sequence[str]) -> list[list[Detection]]:
        return [self.detect(text) for text in texts]

    def read_many(self, texts: Sequence[str]) -> list[Reading]:
        """``detect_many``'s detections, each with whether the detector is unsure of the text (never, here)."""
        return [Reading(found) for found in self.detect_many(texts)]

    def expect(self, texts: int) -> None:  # noqa: B027  # a hint most detectors have no use for
        """A hint that about ``texts`` more texts are coming (a calibration sample): a detector spread over processes
        starts using every core now rather than once the scan has proved big."""


def identity_of(name: str, version: int, settings: DetectorSettings | None) -> list[str | int]:
    """A detector plugin's name and version, and the digest of its settings unless they are the defaults."""
    return [name, version] + ([] if settings is None or settings.is_default else [settings.digest()])


def build_detector(plugin: type[Detector], settings: DetectorSettings | None) -> Detector:
    """``plugin`` built here, with ``settings`` when there are any (a plugin that takes none is built bare)."""
    return plugin() if settings is None else plugin(settings=settings)  # type: ignore[call-arg]
