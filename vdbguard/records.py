"""The unit every connector yields and every attack consumes."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vdbguard.errors import RecordError

TEXT_PAYLOAD_KEYS = ("text", "document", "content", "page_content", "body")
# Reserved payload key: which vdbguard transforms rewrote the record (vdbguard.protect), so none is applied twice.
# vdbguard's own bookkeeping, never the record's text: stored_texts() leaves it out.
PROTECTION_MARK_KEY = "vdbguard_protected"


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

    def stored_texts(self) -> list[tuple[str, str]]:
        """Every text the record keeps in plain sight, by field: its document and each string of its payload, but
        the protection mark vdbguard wrote there (transform names and digests: neither the record's text nor PII)."""
        texts = [("document", self.text)] if self.text and self.text.strip() else []
        strings = (
            (key, value)
            for key, value in self.payload.items()
            if isinstance(value, str) and value.strip() and key != PROTECTION_MARK_KEY
        )
        return texts + [(f"payload.{key}", value) for key, value in strings]

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
        with np.errstate(over="ignore"):
            squared_norm = np.dot(vector, vector)
        if not np.isfinite(squared_norm):
            raise RecordError(self.id, "vector", "has a norm too large for float32 (its square overflows)")
        if attackable and not vector.any():
            raise RecordError(self.id, "vector", "is all zeros (a placeholder?): nothing to attack")
        return vector


def row_digest(record_id: str, vector: np.ndarray | None, payload: bytes, text: str | None) -> bytes:
    """What a verdict depends on in one record (16 bytes): its id, vector, payload as serialised and text."""
    h = hashlib.blake2b(record_id.encode(), digest_size=16)
    if vector is not None:
        try:
            h.update(np.ascontiguousarray(vector, dtype=np.float32).tobytes())
        except (TypeError, ValueError):
            h.update(repr(vector).encode())
    h.update(payload)
    h.update((text or "").encode())
    return h.digest()


def payload_bytes(payload: dict[str, Any]) -> bytes:
    """A payload as a digest reads it: sorted JSON. A columnar page that keeps the store's own dicts passes this
    as its stored payload, so its rows digest exactly as their records would."""
    return _PAYLOAD_JSON.encode(payload).encode()


_TEXT_KEYS_AS_STORED = tuple(json.dumps(key).encode() for key in TEXT_PAYLOAD_KEYS)
_PAYLOAD_JSON = json.JSONEncoder(sort_keys=True, default=str)  # json.dumps would build one per call


def record_digest(record: VectorRecord) -> bytes:
    """The digest of a record built in Python."""
    return row_digest(record.id, record.vector, payload_bytes(record.payload), record.text)


@dataclass(frozen=True)
class Columns:
    """A page as a columnar store hands it out: ids, one float32 matrix (``has_vector`` False where a row stores
    none), each row's payload as the store keeps it (as JSON, so each of its keys shows as the key's quoted name)
    and the texts. A scan hashes and looks up rows from these and builds a VectorRecord (``record(i)``) only for
    the rows it attacks."""

    ids: list[str]
    vectors: np.ndarray
    has_vector: np.ndarray
    stored_payloads: list[bytes]
    texts: list[str | None]
    record: Callable[[int], VectorRecord]


class Batch:
    """A page of records. Passing ``cursor`` as ``resume_from`` continues right after this page.

    A columnar store passes ``columns`` instead of records; ``records`` then builds them all on first use.
    ``digests`` is how a re-scan recognises an unchanged record: one store's pages always come the same way,
    so its digests are comparable from run to run (columns hash the payload as stored, records as sorted JSON).
    """

    __slots__ = ("_records", "columns", "cursor")

    def __init__(self, records: list[VectorRecord] | None, cursor: str | None, columns: Columns | None = None) -> None:
        if (records is None) == (columns is None):
            raise ValueError("a Batch holds either records or columns")
        self._records, self.columns, self.cursor = records, columns, cursor

    @property
    def records(self) -> list[VectorRecord]:
        if self._records is None:
            assert self.columns is not None
            self._records = [self.columns.record(i) for i in range(len(self.columns.ids))]
        return self._records

    @property
    def ids(self) -> list[str]:
        return self.columns.ids if self.columns is not None else [record.id for record in self.records]

    def __len__(self) -> int:
        return len(self.columns.ids) if self.columns is not None else len(self.records)

    def digests(self) -> list[bytes]:
        if self.columns is None:
            return [record_digest(record) for record in self.records]
        c = self.columns
        if not c.ids:
            return []
        matrix = np.ascontiguousarray(c.vectors, dtype=np.float32)
        rows, width = memoryview(matrix).cast("B"), matrix.itemsize * matrix.shape[1]
        digests = []
        starts = range(0, len(c.ids) * width, width)
        for record_id, start, has_vector, payload, text in zip(  # the bytes row_digest hashes, without an array a row
            c.ids, starts, c.has_vector.tolist(), c.stored_payloads, c.texts, strict=True
        ):
            h = hashlib.blake2b(record_id.encode(), digest_size=16)
            if has_vector:
                h.update(rows[start : start + width])
            h.update(payload)
            if text:
                h.update(text.encode())
            digests.append(h.digest())
        return digests

    def source_texts(self) -> list[str | None]:
        """Each row's ``VectorRecord.source_text``, with a record built only for a row whose payload could hold one."""
        if self.columns is None or self._records is not None:
            return [record.source_text for record in self.records]
        c = self.columns
        if not any(key in b"".join(c.stored_payloads) for key in _TEXT_KEYS_AS_STORED):
            return list(c.texts)
        return [
            text or (c.record(i).source_text if any(key in payload for key in _TEXT_KEYS_AS_STORED) else None)
            for i, (text, payload) in enumerate(zip(c.texts, c.stored_payloads, strict=True))
        ]

    def take(self, rows: Sequence[int]) -> list[VectorRecord]:
        """The records of these rows (built from the columns only for them)."""
        if self.columns is not None and self._records is None:
            return [self.columns.record(i) for i in rows]
        return [self.records[i] for i in rows]
