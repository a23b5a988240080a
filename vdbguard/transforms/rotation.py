"""A keyed random orthogonal rotation: the insecure baseline that ``keyed.alignment_attack`` undoes."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from vdbguard.errors import VdbguardError
from vdbguard.transforms.gaussian import as_rows
from vdbguard.transforms.keyed import KeyedTransform


class SecretRotation(KeyedTransform):
    """A keyed random orthogonal rotation, no noise: the insecure baseline (see :func:`alignment_attack`).

    Distances and inner products are preserved exactly, so search is unaffected; so is inversion,
    once about d (plaintext, ciphertext) pairs are known. There is no strength knob (always 1).
    """

    name: ClassVar[str] = "rotation"
    description: ClassVar[str] = (
        "keyed random orthogonal rotation without noise (insecure baseline: ~d known pairs undo it)"
    )
    strength_meaning: ClassVar[str] = "none: a rotation has no knob (always 1)"
    default_strength: ClassVar[float] = 1.0
    default_strengths: ClassVar[tuple[float, ...]] = (1.0,)

    def __init__(self, strength: float | None = None, seed: int | None = None, key: bytes | str | None = None) -> None:
        if strength is not None and float(strength) != 1.0:
            raise VdbguardError(f"a secret rotation has no strength knob; got {strength!r}", "use strength 1")
        super().__init__(1.0, seed, key)

    def _matrix(self, d: int) -> np.ndarray:
        if d not in self._maps:
            self._maps[d] = (None, self._rotation(d))
        return self._maps[d][1]  # type: ignore[return-value]

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        rows = as_rows(vectors)
        return rows @ self._matrix(rows.shape[1])

    def apply_query(self, vectors: np.ndarray) -> np.ndarray:
        return self.apply(vectors)
