"""LEACE concept erasure: remove what any linear probe could read about a concept, and nothing more.

Belrose et al., "LEACE: Perfect linear concept erasure in closed form" (NeurIPS 2023), via EleutherAI's
``concept-erasure`` package. Fitted on labelled vectors, LEACE is the affine map
``x ↦ x - L·R·(x - μ)`` (rank = number of concept columns) that makes the class-conditional means
equal, which is exactly the condition under which no linear classifier beats a constant one, while
moving the vectors as little as possible (least squares in the whitened metric).

What it does not promise: the guarantee is about *linear* readers of the fitted distribution.
A non-linear probe may still read the concept, vectors unlike the fit sample may keep some of it,
and re-normalising rows afterwards (the default for unit rows, as a cosine index would anyway) is a
non-linear step; the tests measure a fresh probe on re-normalised outputs. It removes one concept,
not the text: inversion attacks still recover everything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from vdbguard.errors import VdbguardError
from vdbguard.transforms.base import Transform, not_fitted_error
from vdbguard.transforms.concepts import label_columns, one_hot
from vdbguard.transforms.gaussian import as_rows, renormalize_rows


class LeaceErasure(Transform):
    """Apply ``strength`` of the fitted LEACE correction to documents and queries alike.

    ``strength`` 1.0 is full erasure; below 1 the concept direction is only shrunk, which a probe
    trained on clean vectors misreads but one retrained on protected vectors still reads perfectly
    (the classes stay linearly separable): only 1.0 stands against an adaptive attacker.
    Labels: shape (n,) for one concept, (n, columns) for several; each column binary or categorical.
    """

    name: ClassVar[str] = "leace"
    description: ClassVar[str] = (
        "LEACE concept erasure (Belrose et al. 2023): the least-change affine map after which no linear probe reads "
        "the concept; fit on labelled vectors"
    )
    strength_meaning: ClassVar[str] = "share of the LEACE correction applied, in (0, 1]; 1.0 = full erasure"
    needs_fit: ClassVar[bool] = True
    needs_labels: ClassVar[bool] = True
    default_strength: ClassVar[float] = 1.0
    default_strengths: ClassVar[tuple[float, ...]] = (0.25, 0.5, 0.75, 1.0)

    def __init__(self, strength: float | None = None, seed: int | None = None, renormalize: bool | None = None) -> None:
        super().__init__(strength, seed)
        self.strength = float(self.strength)
        if not 0 < self.strength <= 1:
            raise VdbguardError(f"leace strength must be in (0, 1], got {strength!r}", "use 1.0 for full erasure")
        self.renormalize = renormalize
        self._left: np.ndarray | None = None  # (d, r): erased = x - ((x - bias) @ right.T) @ left.T
        self._right: np.ndarray | None = None  # (r, d)
        self._bias: np.ndarray | None = None

    def fit(self, vectors: np.ndarray, labels: np.ndarray | None = None) -> LeaceErasure:
        import torch
        from concept_erasure import LeaceFitter

        rows = as_rows(vectors)
        z = one_hot(label_columns(labels, len(rows), self.name))
        x = torch.from_numpy(rows.astype(np.float64))
        eraser = LeaceFitter.fit(x, torch.from_numpy(z)).eraser
        # The package may return full d×d factors (when it caps the covariance trace); keep only the rank
        # that is really there so apply() stays two thin matrix products.
        correction = (eraser.proj_left @ eraser.proj_right).numpy()
        u, s, vh = np.linalg.svd(correction)
        rank = int(np.sum(s > 1e-9 * max(s[0], 1e-30)))
        self._left = (u[:, :rank] * s[:rank]).astype(np.float32)
        self._right = vh[:rank].astype(np.float32)
        self._bias = (eraser.bias if eraser.bias is not None else x.mean(dim=0)).numpy().astype(np.float32)
        return self

    @property
    def rank(self) -> int:
        """How many directions the erasure changes (one per binary column, k-1 per k-class column)."""
        return 0 if self._right is None else len(self._right)

    def _erase(self, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self._left is None or self._right is None or self._bias is None:
            raise not_fitted_error(self)
        rows = as_rows(vectors)
        if rows.shape[1] != len(self._bias):
            raise VdbguardError(
                f"vectors have dimension {rows.shape[1]}, the eraser was fitted on {len(self._bias)}",
                "fit on vectors from the same embedder",
            )
        coefficients = (rows - self._bias) @ self._right.T
        coefficients *= np.float32(self.strength)
        return rows - coefficients @ self._left.T, rows

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        erased, rows = self._erase(vectors)
        return renormalize_rows(erased, rows, self.renormalize)

    def apply_query(self, vectors: np.ndarray) -> np.ndarray:
        """The same map, so queries meet documents in the erased space."""
        return self.apply(vectors)

    def params(self) -> dict[str, Any]:
        return {"strength": self.strength, "renormalize": self.renormalize, "rank": self.rank}

    def fit_state(self) -> dict[str, np.ndarray]:
        if self._left is None or self._right is None or self._bias is None:
            return {}
        return {"left": self._left, "right": self._right, "bias": self._bias}

    def load_fit_state(self, state: Mapping[str, np.ndarray]) -> LeaceErasure:
        left, right, bias = (np.asarray(state[k], dtype=np.float32) for k in ("left", "right", "bias"))
        self._left, self._right, self._bias = left, right, bias
        return self

    @property
    def fit_dim(self) -> int | None:
        return None if self._bias is None else len(self._bias)
