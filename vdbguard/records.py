"""The unit every connector yields and every attack consumes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vdbguard.errors import RecordError

TEXT_PAYLOAD_KEYS = ("text", "document", "content", "page_content", "body")


def payload_text(payload: Mapping[str, Any] | None) -> str | None:
    """The text a payload stores under one of the keys frameworks use for it (LangChain, Chroma, ...)."""
    for key in TEXT_PAYLOAD_KEYS:
        value = (payload or {}).get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


@dataclass(slots=True)
class VectorRecord:
    """One stored point. ``vector`` is the one scanned; ``named_vectors`` holds every named vector a
    multi-vector store keeps for the point (the connector's ``vector_name`` picks ``vector`` among them)."""

    id: str
    vector: np.ndarray | None
    payload: dict[str, Any] = field(default_factory=dict)
    text: str | None = None
    collection: str = ""
    namespace: str | None = None
    named_vectors: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def source_text(self) -> str | None:
        """The record's stored text, if the store keeps it beside the vector."""
        return self.text or payload_text(self.payload)

    def checked_vector(self, dimension: int | None = None, *, attackable: bool = False) -> np.ndarray:
        """The vector as float32, or a RecordError naming this record and what is wrong with it. ``attackable``
        also refuses an all-zero vector: no embedder makes one, and it holds nothing to recover."""
        if self.vector is None:
            others = ", ".join(sorted(self.named_vectors))
            held = f" (the record holds only {others}: the connector's vector_name picks one)" if others else ""
            raise RecordError(self.id, "vector", f"is missing{held}")
        vector = np.asarray(self.vector, dtype=np.float32)
        if vector.ndim != 1 or vector.size == 0:
            raise RecordError(self.id, "vector", f"has shape {vector.shape}, expected a flat list of floats")
        if dimension is not None and vector.size != dimension:
            raise RecordError(self.id, "vector", f"has dimension {vector.size} but the embedder produces {dimension}")
        if not np.all(np.isfinite(vector)):
            raise RecordError(self.id, "vector", "contains NaN or infinite values")
        if attackable and not vector.any():
            raise RecordError(self.id, "vector", "is all zeros (a placeholder?): nothing to attack")
        return vector


@dataclass(slots=True)
class Batch:
    """A page of records. Passing ``cursor`` as ``resume_from`` continues right after this page."""

    records: list[VectorRecord]
    cursor: str | None
