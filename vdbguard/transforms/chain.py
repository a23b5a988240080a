"""Defenses in series, e.g. ``redact+gaussian``: redact the text, embed, then add noise to the vector.

A chain is named by its parts joined with ``+``; only the last part takes the swept ``strength``, the
others run at their own default strength (pass built parts to :class:`Chain` to choose them). The
frontier measures a chain like any transform, so it can say whether the chain beats its parts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Self

import numpy as np

from vdbguard.errors import VdbguardError
from vdbguard.transforms.base import Transform, changes_space

SEPARATOR = "+"


class Chain(Transform):
    """Text stages first (in order), then vector stages (in order); queries go through each vector stage."""

    description: ClassVar[str] = "the named transforms in series"
    strength_meaning: ClassVar[str] = "the last part's strength"

    def __init__(self, parts: Sequence[Transform]) -> None:
        if len(parts) < 2:
            raise VdbguardError(
                "a chain needs at least two transforms", "name them joined by '+', e.g. redact+gaussian"
            )
        text_parts = [p for p in parts if p.text_side]
        if parts[: len(text_parts)] != text_parts:
            raise VdbguardError(
                f"in {SEPARATOR.join(p.name for p in parts)}, text transforms must come first",
                "text is redacted before it is embedded: put redact before the vector transforms",
            )
        super().__init__(parts[-1].strength, parts[-1].seed)
        self.parts = list(parts)
        self.text_parts = text_parts
        self.vector_parts = list(parts[len(text_parts) :])
        self.name = SEPARATOR.join(p.name for p in parts)  # type: ignore[misc]  # one class, a name per chain
        self.text_side = bool(text_parts)  # type: ignore[misc]
        self.needs_fit = any(p.needs_fit for p in parts)  # type: ignore[misc]
        self.needs_labels = any(p.needs_labels for p in parts)  # type: ignore[misc]
        self.needs_key = any(p.needs_key for p in parts)  # type: ignore[misc]
        self.default_strength = parts[-1].default_strength  # type: ignore[misc]
        self.default_strengths = parts[-1].default_strengths  # type: ignore[misc]
        self.changes_space = any(changes_space(p) for p in self.vector_parts)

    def fit(self, vectors: np.ndarray, labels: np.ndarray | None = None) -> Chain:
        """Fit each vector stage on the output of the stages before it."""
        for part in self.vector_parts:
            if part.needs_fit:
                part.fit(vectors, labels)
            vectors = part.apply(vectors)
        return self

    def expect(self, texts: int) -> None:
        for part in self.text_parts:
            part.expect(texts)

    def transform_texts(self, texts: Sequence[str]) -> list[str]:
        out = list(texts)
        for part in self.text_parts:
            out = part.transform_texts(out)
        return out

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        for part in self.vector_parts:
            vectors = part.apply(vectors)
        return np.asarray(vectors, dtype=np.float32)

    def apply_query(self, vectors: np.ndarray) -> np.ndarray:
        for part in self.vector_parts:
            vectors = part.apply_query(vectors)
        return np.asarray(vectors, dtype=np.float32)

    @property
    def redact_queries(self) -> bool:
        return any(getattr(p, "redact_queries", False) for p in self.text_parts)

    def fit_state(self) -> dict[str, np.ndarray]:
        """Each part's fit, its arrays prefixed with the part's position."""
        return {f"{i}.{key}": value for i, p in enumerate(self.parts) for key, value in p.fit_state().items()}

    def load_fit_state(self, state: Mapping[str, np.ndarray]) -> Self:
        for i, part in enumerate(self.parts):
            if part.needs_fit:
                prefix = f"{i}."
                part.load_fit_state({k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)})
        return self

    @property
    def fit_dim(self) -> int | None:
        return next((p.fit_dim for p in self.vector_parts if p.needs_fit), None)

    def params(self) -> dict[str, Any]:
        return {"strength": self.strength, "parts": [{"name": p.name, **p.params()} for p in self.parts]}


def build_transform(name: str, strength: float | None = None, seed: int | None = None) -> Transform:
    """``gaussian``, or a chain ``redact+gaussian`` / ``leace:1+gaussian``: a part's own strength follows a
    colon; ``strength`` (None: the class default) goes to the last part when it has none."""
    from vdbguard.transforms import load_transform_class

    specs = [spec.strip().partition(":") for spec in name.split(SEPARATOR)]
    if not all(spec[0] for spec in specs):
        raise VdbguardError(f"transform name {name!r} has an empty part", "join names with '+', e.g. redact+gaussian")
    parts = []
    for index, (part, _, own) in enumerate(specs):
        value = float(own) if own else strength if index == len(specs) - 1 else None
        parts.append(load_transform_class(part)(strength=value, seed=seed))  # None: the class's default_strength
    return parts[0] if len(parts) == 1 else Chain(parts)


def check_name(name: str) -> None:
    """Raise, naming the choices, when a part of ``name`` is not an installed transform."""
    from vdbguard.transforms import load_transform_class

    for spec in name.split(SEPARATOR):
        load_transform_class(spec.strip().partition(":")[0])


def sweep(name: str, seed: int | None = 0) -> list[Transform]:
    """``name`` at each strength its last part sweeps, weakest first (one setting when it names its own)."""
    from vdbguard.transforms import load_transform_class

    last, _, own = name.split(SEPARATOR)[-1].strip().partition(":")
    if own:
        return [build_transform(name, seed=seed)]
    return [build_transform(name, strength, seed=seed) for strength in load_transform_class(last).default_strengths]
