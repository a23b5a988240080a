"""A detector finds PII in text: what inversion recovered, or the stored document itself."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from vdbguard.pii import PiiType


@dataclass(frozen=True)
class Detection:
    pii_type: PiiType
    value: str
    start: int
    end: int
    score: float
    recognizer: str


class Detector(ABC):
    name: ClassVar[str]
    version: ClassVar[int] = 1  # raised when a text can get other detections: verdicts keyed on it are redone
    max_chars: ClassVar[int | None] = None  # read per text; the rest is not examined
    cutoff: ClassVar[float] = 0.0  # the score a detection needs to be reported

    @abstractmethod
    def detect(self, text: str) -> list[Detection]: ...

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
        for text in texts:
            self._check_whole(text)
        return self.detect_many(texts)

    def _check_whole(self, text: str) -> None:
        if self.max_chars is not None and len(text) > self.max_chars:
            raise ValueError(
                f"is {len(text):,} characters and {self.name} examines at most {self.max_chars:,}: "
                "split it into chunks before embedding"
            )

    def detect_many(self, texts: Sequence[str]) -> list[list[Detection]]:
        return [self.detect(text) for text in texts]
