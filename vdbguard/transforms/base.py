"""What every write-path defense is: vectors in, protected vectors out, before insert.

A transform may need fitting (a concept-erasure projection, a PQ codebook) and may need its own
query-side transform so retrieval keeps working (keyed encryption, quantization). ``strength`` is
the one knob the frontier and ``calibrate`` sweep; each transform says what it maps to.
What a fit learned leaves as plain arrays (``fit_state``), so :mod:`vdbguard.transforms.fitting`
can store it without pickle and a resumed copy or a second process applies exactly the same map.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Self

import numpy as np

from vdbguard.errors import VdbguardError


class Transform(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    strength_meaning: ClassVar[str]  # e.g. "noise scale λ", "privacy budget ε (smaller is stronger)"
    needs_fit: ClassVar[bool] = False
    # fit() needs concept labels (vdbguard.transforms.concepts builds them from the project corpus)
    needs_labels: ClassVar[bool] = False
    # needs a secret key (``key=`` or $VDBGUARD_TRANSFORM_KEY); queries must go through apply_query
    needs_key: ClassVar[bool] = False
    # the strength used when none is given: the most protection the defense frontier measured within 2 points of
    # recall@10 (BENCHMARKS.md, "Defense frontier"), or the one setting a transform without a knob has
    default_strength: ClassVar[float]
    # strengths the frontier sweeps, weakest first
    default_strengths: ClassVar[tuple[float, ...]] = ()
    # works on text before the embedder (redaction): transform_texts() does the work, apply() refuses
    text_side: ClassVar[bool] = False

    def __init__(self, strength: float | None = None, seed: int | None = None) -> None:
        self.strength = self.default_strength if strength is None else strength
        self.seed = seed

    def fit(self, vectors: np.ndarray, labels: np.ndarray | None = None) -> Transform:
        """Learn what the transform needs from sample vectors (and concept labels, where it uses them)."""
        return self

    @abstractmethod
    def apply(self, vectors: np.ndarray) -> np.ndarray:
        """Protect document vectors (rows) before they are stored. Returns float32 rows."""

    def transform_texts(self, texts: Sequence[str]) -> list[str]:
        """What reaches the embedder: the texts unchanged, except for text-side transforms (``text_side``)."""
        return list(texts)

    def write_path(self, texts: Sequence[str], embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """The whole write path for a pipeline that embeds itself: text stage, its embedder, vector stage."""
        return self.apply(np.asarray(embed(self.transform_texts(texts)), dtype=np.float32))

    def expect(self, texts: int) -> None:  # noqa: B027  # only text-side transforms have a use for it
        """About ``texts`` texts are coming through ``transform_texts`` (a copy of a collection): time to get ready."""

    def apply_query(self, vectors: np.ndarray) -> np.ndarray:
        """The matching query-side transform; identity unless the stored space changed (keys, codes)."""
        return np.asarray(vectors, dtype=np.float32)

    def params(self) -> dict[str, Any]:
        return {"strength": self.strength}

    def fit_state(self) -> dict[str, np.ndarray]:
        """The arrays fit() learned ({} when unfitted or nothing is learned): saved as a plain .npz, never pickled."""
        return {}

    def load_fit_state(self, state: Mapping[str, np.ndarray]) -> Self:
        """Take back what :meth:`fit_state` gave, so a saved fit is reused instead of fitted again."""
        if self.needs_fit:
            raise VdbguardError(
                f"transform {self.name!r} cannot load a saved fit", "fit it on a sample instead: transform.fit(vectors)"
            )
        return self

    @property
    def fit_dim(self) -> int | None:
        """The input dimension the fit was made for; None when unfitted or when any dimension works."""
        return None

    @property
    def fitted(self) -> bool:
        """Whether apply() may run. A plugin that fits but exports no fit_state() is taken at its word."""
        return not self.needs_fit or type(self).fit_state is Transform.fit_state or bool(self.fit_state())


def not_fitted_error(transform: Transform) -> VdbguardError:
    """The one error every fit-needing transform raises when used before fit(), with the three ways out."""
    how = (
        "fit(vectors, labels) (vdbguard.transforms.concepts.corpus_concept_set(embedder, 'PERSON') gives both)"
        if transform.needs_labels
        else "fit(sample_vectors)"
    )
    return VdbguardError(
        f"transform {transform.name!r} is not fitted",
        f"call {how} first, let `vdbguard protect` fit it on a sample of the collection, or load a saved fit: "
        "vdbguard.transforms.fitting.load_fit(transform, path)",
    )


def changes_space(transform: Transform) -> bool:
    """Whether stored vectors live in another space than raw queries (so queries need ``apply_query``).

    A transform may say so with a ``changes_space`` attribute; otherwise overriding ``apply_query``
    is taken as the sign (the base class's is the identity).
    """
    explicit = getattr(transform, "changes_space", None)
    if isinstance(explicit, bool):
        return explicit
    return type(transform).apply_query is not Transform.apply_query
