"""Isotropic Gaussian noise on stored embeddings: the defence Vec2Text evaluates.

Morris et al., "Text Embeddings Reveal (Almost) As Much As Text" (EMNLP 2023), §6 adds
``N(0, λ²)`` to every coordinate of a unit GTR embedding. At λ = 0.01 reconstruction BLEU fell
from about 80 to about 10 while retrieval NDCG@10 on BEIR only moved from 0.302 to 0.296: a little
noise costs the attacker far more than it costs search. That attacker did not train on noisy
vectors; one that does recovers more, so treat λ as a knob to measure (``vdbguard frontier``),
not a guarantee.

This module also holds the small row helpers the other vector transforms share.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from vdbguard.errors import VdbguardError
from vdbguard.transforms.base import Transform

UNIT_TOLERANCE = 1e-3  # |‖x‖² - 1| below this counts as a unit row (float32 embeddings sit near 1e-7)


def as_rows(vectors: np.ndarray, what: str = "vectors") -> np.ndarray:
    """``vectors`` as a C-contiguous float32 matrix, refusing what no transform can protect."""
    rows = np.ascontiguousarray(vectors, dtype=np.float32)
    if rows.ndim != 2:
        raise VdbguardError(f"{what} must be a 2-D array of rows, got shape {rows.shape}", "pass shape (n, dim)")
    if rows.size and not np.isfinite(rows).all():
        raise VdbguardError(f"{what} contain NaN or infinite values", "drop or repair those rows before inserting")
    return rows


def squared_norms(rows: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", rows, rows)


def unit_mask(rows: np.ndarray) -> np.ndarray:
    """Which rows are unit-length (what sentence-transformers and most RAG pipelines store)."""
    return np.abs(squared_norms(rows) - 1.0) < UNIT_TOLERANCE


def renormalize_rows(noisy: np.ndarray, original: np.ndarray, mode: bool | None) -> np.ndarray:
    """Scale rows back to unit length in place: all rows (True), none (False), or the rows that were unit (None).

    Re-normalising is post-processing, so it keeps any privacy guarantee of the noise, and it keeps
    the stored vectors in the shape a cosine / dot-product index expects.
    """
    if mode is False:
        return noisy
    mask = np.ones(len(noisy), dtype=bool) if mode else unit_mask(original)
    if not mask.any():
        return noisy
    norms = np.sqrt(squared_norms(noisy))
    scale = np.where(mask & (norms > 0), 1.0 / np.maximum(norms, np.finfo(np.float32).tiny), 1.0)
    noisy *= scale.astype(np.float32)[:, None]
    return noisy


def check_strength(strength: float, name: str, positive: bool = True) -> float:
    value = float(strength)
    if not np.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise VdbguardError(f"{name} must be a finite number {bound}, got {strength!r}")
    return value


class AdditiveNoise(Transform):
    """Store ``x + z`` for noise ``z`` drawn by :meth:`noise`; rows that came in unit-length go out unit-length.

    ``renormalize``: ``None`` (default) re-normalises exactly the rows whose input norm was 1, so a
    cosine index sees unit vectors as before and non-unit inputs keep raw additive noise; ``True``
    normalises every row; ``False`` never does. The noise generator is seeded once per instance and
    advances with every call, so two batches never share noise (shared noise would cancel in
    differences); the same seed and the same sequence of calls reproduce the same output.
    """

    strength_name: ClassVar[str]  # what the error for a bad strength calls it
    zero_allowed: ClassVar[bool] = False  # whether strength 0 (no noise at all) passes the check

    def __init__(self, strength: float | None = None, seed: int | None = None, renormalize: bool | None = None) -> None:
        super().__init__(strength, seed)
        self.strength = check_strength(self.strength, self.strength_name, positive=not self.zero_allowed)
        self.renormalize = renormalize
        self._rng = np.random.default_rng(seed)

    @abstractmethod
    def noise(self, n: int, d: int) -> np.ndarray:
        """``n`` float32 draws of the noise in R^d, from the instance's generator."""

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        rows = as_rows(vectors)
        noisy = self.noise(*rows.shape)
        noisy += rows
        return renormalize_rows(noisy, rows, self.renormalize)

    def params(self) -> dict[str, Any]:
        return {"strength": self.strength, "seed": self.seed, "renormalize": self.renormalize}


class GaussianNoise(AdditiveNoise):
    """Add ``N(0, λ²)`` to each coordinate; ``renormalize`` as in :class:`AdditiveNoise`."""

    name: ClassVar[str] = "gaussian"
    description: ClassVar[str] = (
        "Gaussian noise N(0, λ²) per coordinate, re-normalised for unit rows (Vec2Text §6, Morris et al. 2023)"
    )
    strength_meaning: ClassVar[str] = "noise scale λ: per-coordinate standard deviation (larger is stronger)"
    strength_name: ClassVar[str] = "noise scale λ"
    zero_allowed: ClassVar[bool] = True
    # expected noise norm is λ·√d: 0.02 … 2.0 for d = 384
    default_strength: ClassVar[float] = 0.05
    default_strengths: ClassVar[tuple[float, ...]] = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1)

    def noise(self, n: int, d: int) -> np.ndarray:
        z = self._rng.standard_normal((n, d), dtype=np.float32)
        z *= np.float32(self.strength)
        return z
