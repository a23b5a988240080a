"""Attacks for a store whose embedding model cannot run here (an API model, an in-house encoder).

ALGEN (Chen et al., "Few-shot inversion attacks on sentence embeddings", 2025) shows that a linear
map fitted on about a thousand (vector, text) pairs carries one encoder's space into another's well
enough for the second encoder's inversion attacks to work. Where the store keeps text beside its
vectors, those pairs are free: embed the stored text with a packaged model, fit the map from the
stored vectors to those embeddings, and run every packaged attack on the mapped vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from vdbguard.attacks.base import Attack, Inference, Progress, l2_normalise
from vdbguard.corpus import LabelledText

RIDGE = 0.1


def ridge_map(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The ridge-regularised linear map from rows of ``x`` (store space) to rows of ``y`` (target space)."""
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    gram = x64.T @ x64 + RIDGE * np.eye(x64.shape[1])
    return np.linalg.solve(gram, x64.T @ y64).astype(np.float32)


class AlignedAttack(Attack):
    """A packaged attack run on store vectors mapped into its embedder's space."""

    description: ClassVar[str] = "a packaged attack on store vectors mapped into its embedder's space (ALGEN)"

    def __init__(self, inner: Attack, mapping: np.ndarray) -> None:
        self.inner = inner
        self.mapping = mapping
        self.name = f"{inner.name}@aligned"  # type: ignore[misc]  # one wrapper class, one name per wrapped attack
        self.kind = inner.kind  # type: ignore[misc]
        self.threshold = inner.threshold

    def fit(self, items: Sequence[LabelledText], embeddings: np.ndarray, progress: Progress | None = None) -> None:
        raise NotImplementedError("an aligned attack wraps one trained in its own embedder's space")

    def infer(self, vectors: np.ndarray, known_texts: Sequence[str | None] | None = None) -> list[Inference]:
        return self.inner.infer(l2_normalise(l2_normalise(vectors) @ self.mapping), known_texts=known_texts)

    def metrics(self) -> dict[str, float]:
        return self.inner.metrics()

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        np.save(directory / "alignment.npy", self.mapping)

    @classmethod
    def load(cls, directory: Path) -> Attack:
        raise NotImplementedError("load the mapping with load_mapping() and wrap the trained attacks again")


def load_mapping(directory: Path) -> np.ndarray:
    return np.load(directory / "alignment.npy", allow_pickle=False)
