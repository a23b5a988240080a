"""What every write-path defense is: vectors in, protected vectors out, before insert.

A transform may need fitting (a concept-erasure projection, a PQ codebook) and may need its own
query-side transform so retrieval keeps working (keyed encryption, quantization). ``strength`` is
the one knob the frontier and ``calibrate`` sweep; each transform says what it maps to.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np


class Transform(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    strength_meaning: ClassVar[str]  # e.g. "noise scale λ", "privacy budget ε (smaller is stronger)"
    needs_fit: ClassVar[bool] = False
    # fit() needs concept labels (vdbguard.transforms.concepts builds them from the project corpus)
    needs_labels: ClassVar[bool] = False
    # needs a secret key (``key=`` or $VDBGUARD_TRANSFORM_KEY); queries must go through apply_query
    needs_key: ClassVar[bool] = False
    # strengths the frontier sweeps, weakest first
    default_strengths: ClassVar[tuple[float, ...]] = ()

    def __init__(self, strength: float, seed: int | None = None) -> None:
        self.strength = strength
        self.seed = seed

    def fit(self, vectors: np.ndarray, labels: np.ndarray | None = None) -> Transform:
        """Learn what the transform needs from sample vectors (and concept labels, where it uses them)."""
        return self

    @abstractmethod
    def apply(self, vectors: np.ndarray) -> np.ndarray:
        """Protect document vectors (rows) before they are stored. Returns float32 rows."""

    def apply_query(self, vectors: np.ndarray) -> np.ndarray:
        """The matching query-side transform; identity unless the stored space changed (keys, codes)."""
        return np.asarray(vectors, dtype=np.float32)

    def params(self) -> dict[str, Any]:
        return {"strength": self.strength}
