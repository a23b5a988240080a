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

    @abstractmethod
    def detect(self, text: str) -> list[Detection]: ...

    def detect_many(self, texts: Sequence[str]) -> list[list[Detection]]:
        return [self.detect(text) for text in texts]
