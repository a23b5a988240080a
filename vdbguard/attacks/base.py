"""What every attack is: trained on (text, embedding) pairs, then run on stored vectors alone."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from vdbguard.corpus import LabelledText
from vdbguard.embedders import Embedder
from vdbguard.pii import PiiType

Progress = Callable[[int], None]
CONFIG_FILE = "config.json"


@dataclass(frozen=True)
class Inference:
    """What one attack learned about one vector, before any detector looks at it."""

    recovered_text: str = ""
    recovered_tokens: tuple[tuple[str, float], ...] = ()
    type_scores: Mapping[PiiType, float] = field(default_factory=dict)
    # (type, value, score) for PII an attack recovered as a value, e.g. a name ranked first by slot search
    recovered_pii: tuple[tuple[PiiType, str, float], ...] = ()
    # secret exposure in bits (Carlini et al.) per known secret value, keyed by PII type
    exposure_bits: Mapping[PiiType, float] = field(default_factory=dict)
    # sensitive attributes that are not PII types (sex, age band, author): attribute -> (value, probability)
    attributes: Mapping[str, tuple[str, float]] = field(default_factory=dict)


class Attack(ABC):
    """An attack plugin. Subclasses are registered under the ``vdbguard.attacks`` entry point group.

    ``version`` is part of the cache key: bump it whenever training changes what gets saved.
    ``embedder`` is bound by the trainer before ``fit``/``infer``: black-box attacks query it to
    re-embed their guesses (it is the target model; the attack never sees the stored text).
    """

    embedder: Embedder | None = None

    name: ClassVar[str]
    description: ClassVar[str]
    version: ClassVar[int] = 1
    kind: ClassVar[str] = "inversion"  # "inversion" recovers text; "probe" scores attributes
    rank: ClassVar[int] = 0  # `--attack strongest` picks the inversion attack with the highest rank
    threshold: float
    _metrics: dict[str, float]

    @abstractmethod
    def fit(self, items: Sequence[LabelledText], embeddings: np.ndarray, progress: Progress | None = None) -> None:
        """Train on labelled texts and their embeddings (rows L2-normalised)."""

    @abstractmethod
    def infer(self, vectors: np.ndarray, known_texts: Sequence[str | None] | None = None) -> list[Inference]:
        """Attack stored vectors; one Inference per row.

        ``known_texts`` is the owner's stored text per row, when the owner has it. Only owner-side
        audits use it (secret exposure ranks the *known* secret); inversion attacks must ignore it.
        """

    @abstractmethod
    def save(self, directory: Path) -> None: ...

    @classmethod
    @abstractmethod
    def load(cls, directory: Path) -> Attack: ...

    def metrics(self) -> dict[str, float]:
        """Held-out quality measured during fit, so a report can say how strong the attack was."""
        return dict(getattr(self, "_metrics", {}))

    def write_config(self, directory: Path, settings: Mapping[str, Any]) -> None:
        """Write config.json beside the saved weights: the settings ``load`` rebuilds from, and the metrics."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / CONFIG_FILE).write_text(json.dumps({**settings, "metrics": self.metrics()}))

    @staticmethod
    def read_config(directory: Path) -> dict[str, Any]:
        return json.loads((directory / CONFIG_FILE).read_text())


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Stores differ (Qdrant may hand back raw or normalised vectors); attacks see unit vectors."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)
