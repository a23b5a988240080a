"""What every attack is: trained on (text, embedding) pairs, then run on stored vectors alone."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from vdbguard.corpus import LabelledText
from vdbguard.pii import PiiType

Progress = Callable[[int], None]


@dataclass(frozen=True)
class Inference:
    """What one attack learned about one vector, before any detector looks at it."""

    recovered_text: str = ""
    recovered_tokens: tuple[tuple[str, float], ...] = ()
    type_scores: Mapping[PiiType, float] = field(default_factory=dict)


class Attack(ABC):
    """An attack plugin. Subclasses are registered under the ``vdbguard.attacks`` entry point group.

    ``version`` is part of the cache key: bump it whenever training changes what gets saved.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    version: ClassVar[int] = 1
    kind: ClassVar[str] = "inversion"  # "inversion" recovers text; "probe" scores attributes
    strength: ClassVar[int] = 0  # `--attack strongest` picks the inversion attack with the highest
    threshold: float

    @abstractmethod
    def fit(self, items: Sequence[LabelledText], embeddings: np.ndarray, progress: Progress | None = None) -> None:
        """Train on labelled texts and their embeddings (rows L2-normalised)."""

    @abstractmethod
    def infer(self, vectors: np.ndarray) -> list[Inference]:
        """Attack L2-normalised stored vectors; one Inference per row."""

    @abstractmethod
    def save(self, directory: Path) -> None: ...

    @classmethod
    @abstractmethod
    def load(cls, directory: Path) -> Attack: ...

    def metrics(self) -> dict[str, float]:
        """Held-out quality measured during fit, so a report can say how strong the attack was."""
        return {}


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Stores differ (Qdrant may hand back raw or normalised vectors); attacks see unit vectors."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)
