"""What the ``qdrant`` and ``qdrant-edge`` connectors share: the same engine, so the same points, vectors,
point ids and cursors; only how a collection is opened differs."""

from __future__ import annotations

import json
import uuid
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from vdbguard.connectors.base import CollectionInfo, Connector
from vdbguard.connectors.support import StoreCalls, metric_name, store_metric

from vdbguard.errors import ConnectorError, PartialWriteError, RecordError, VdbguardError
from vdbguard.records import Batch, Columns, VectorRecord, payload_bytes

UPSERT_CHUNK = 256
_DISTANCES = {"cosine": "Cosine", "l2": "Euclid", "ip": "Dot"}  # vdbguard metric -> Qdrant distance


def distance_of(metric: str, store: str) -> str:
    """The Qdrant distance for ``metric`` (any spelling vdbguard knows)."""
    distance = store_metric(metric, _DISTANCES)
    if distance is None:
        raise VdbguardError(f"unknown metric {metric!r} for {store}", "use cosine, l2 or ip")
    return distance


@dataclass(frozen=True)
class VectorLayout:
    """The dense vectors of a collection: name -> (size, Qdrant distance); "" is the unnamed vector."""

    dense: dict[str, tuple[int, str]]
    named: bool
    primary: str | None  # the vector that becomes VectorRecord.vector; None if there is no dense vector
    sparse: tuple[str, ...] = ()

    @classmethod
    def build(
        cls, dense: Mapping[str, tuple[int, str]], *, named: bool, vector_name: str | None, where: str, sparse=()
    ) -> VectorLayout:
        names = sorted(dense)  # a server lists named vectors sorted; Edge's config order is not stable
        if vector_name is not None and vector_name not in dense:
            shown = ", ".join(repr(n) for n in names) if named else "one unnamed vector"
            raise ConnectorError(
                f"{where} has no dense vector named {vector_name!r}",
                f"the collection has {shown}; pass one of them as vector_name, or none for the first",
            )
        primary = vector_name if vector_name is not None else (names[0] if names else None)
        return cls({n: dense[n] for n in names}, named, primary, tuple(sparse))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.dense) if self.named else ()

    @property
    def dimension(self) -> int | None:
        return self.dense[self.primary][0] if self.primary is not None else None

    @property
    def distance(self) -> str | None:
        return self.dense[self.primary][1] if self.primary is not None else None

    @property
    def metric(self) -> str | None:
        """cosine / l2 / ip; None for Manhattan, which has no vdbguard name (``extra`` keeps the distance)."""
        return metric_name(self.distance or "")

    def record(self, point_id: Any, raw: Any, payload: Any, collection: str) -> VectorRecord:
        """A VectorRecord from a point as the engine returns it (vector: list, or dict of name -> list)."""
        if isinstance(raw, dict):
            named = {k: np.asarray(v, dtype=np.float32) for k, v in raw.items() if k in self.dense and _dense(v)}
        else:
            named = {"": np.asarray(raw, dtype=np.float32)} if _dense(raw) else {}
        vector = named.get(self.primary) if self.primary is not None else None
        return VectorRecord(
            id=str(point_id),
            vector=vector,
            payload=dict(payload) if payload else {},
            collection=collection,
            named_vectors=named if self.named else {},
        )

    def page(self, points: Sequence[Any], cursor: str, collection: str) -> Batch:
        """A scrolled page, as columns when every point holds the one unnamed vector at the collection's
        dimension (a record is built only for a row the scan attacks), else as records. Either way a row
        digests alike: payloads hash as the sorted JSON a record's digest uses."""
        vectors = [p.vector for p in points]
        matrix = None if self.named or self.primary is None else _as_matrix(vectors, self.dimension)
        if matrix is None:
            return Batch(
                [self.record(p.id, v, p.payload, collection) for p, v in zip(points, vectors, strict=True)], cursor
            )
        ids = [str(p.id) for p in points]
        payloads = [p.payload or {} for p in points]  # each point's own dict, read once

        def record(i: int) -> VectorRecord:
            return VectorRecord(id=ids[i], vector=matrix[i], payload=payloads[i], collection=collection)

        stored = [payload_bytes(payload) for payload in payloads]
        present = np.ones(len(points), dtype=bool)
        return Batch(None, cursor, Columns(ids, matrix, present, stored, [None] * len(points), record))

    def point_vector(self, record: VectorRecord) -> list[float] | dict[str, list[float]]:
        """The vector(s) to write for ``record``, checked (RecordError names the record and the field)."""
        if self.primary is None:
            raise VdbguardError("this Qdrant collection has no dense vector to write", "use ensure_collection")
        vector = record.checked_vector(self.dimension).tolist()
        if not self.named:
            return vector
        vectors = {}
        for name, value in record.named_vectors.items():
            field = f"named_vectors[{name!r}]"
            if name not in self.dense:
                has = ", ".join(self.dense)
                raise RecordError(record.id, field, f"is not a vector of this collection (it has {has})")
            try:
                vectors[name] = VectorRecord(id=record.id, vector=value).checked_vector(self.dense[name][0]).tolist()
            except RecordError as exc:
                raise RecordError(record.id, field, exc.problem) from exc
        if self.primary in vectors and vectors[self.primary] != vector:
            raise RecordError(
                record.id, "vector", f"differs from named_vectors[{self.primary!r}]; give one of them, or both equal"
            )
        vectors[self.primary] = vector
        return vectors


def _as_matrix(vectors: list[Any], dimension: int | None) -> np.ndarray | None:
    """A page's vectors as one float32 matrix; None when a row is not one dense vector of ``dimension``."""
    try:
        matrix = np.array(vectors, dtype=np.float32)
    except (TypeError, ValueError):  # a missing, named, ragged or nested vector
        return None
    return matrix if matrix.ndim == 2 and matrix.shape[1] == dimension else None


def _dense(value: Any) -> bool:
    return isinstance(value, list | tuple | np.ndarray) and len(value) > 0


def point_id_of(record_id: str) -> int | str:
    """Qdrant point ids are unsigned 64-bit integers or UUIDs; anything else is refused (fail closed)."""
    text = str(record_id)
    if text.isascii() and text.isdigit() and str(int(text)) == text and int(text) < 2**64:
        return int(text)
    try:
        return str(uuid.UUID(text))
    except ValueError:
        problem = "is neither an unsigned integer nor a UUID (the only point ids Qdrant accepts)"
        raise RecordError(text, "id", problem) from None


def encode_cursor(next_id: Any) -> str:
    """``{"next": ID}``: the id the next page starts at (scroll offsets are inclusive); null when done."""
    if next_id is not None and not isinstance(next_id, int):
        next_id = str(next_id)
    return json.dumps({"next": next_id})


def decode_cursor(cursor: str | None) -> tuple[bool, int | str | None]:
    """(done, offset) from a cursor made by ``encode_cursor``."""
    if cursor is None:
        return False, None
    try:
        data = json.loads(cursor)
        value = data["next"]
        if value is None:
            return True, None
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ValueError(value)
        return False, value if isinstance(value, int) else str(uuid.UUID(value))
    except (ValueError, TypeError, KeyError):
        raise VdbguardError(
            f"bad Qdrant resume cursor {cursor!r}",
            'pass a cursor taken from a qdrant scan (like {"next": 512}), or none to start over',
        ) from None


class PointsConnector(StoreCalls, Connector):
    """Describe, scan and upsert for a Qdrant engine; subclasses open it and speak its API.

    ``_reading``/``_writing`` give an engine handle and the collection's layout; ``_count``,
    ``_scroll``, ``_nearest``, ``_point``, ``_write_points``, ``_delete_points`` and ``_flush`` are the
    engine calls; ``_mode`` says what ``describe`` reports about how the collection is read.
    """

    vector_name: str | None

    @abstractmethod
    def _reading(self) -> tuple[Any, VectorLayout]: ...

    @abstractmethod
    def _writing(self) -> tuple[Any, VectorLayout]: ...

    @abstractmethod
    def _count(self, handle: Any) -> int: ...

    @abstractmethod
    def _scroll(self, handle: Any, offset: int | str | None, limit: int) -> tuple[Sequence[Any], Any]: ...

    @abstractmethod
    def _point(self, point_id: int | str, vector: Any, payload: dict[str, Any]) -> Any: ...

    @abstractmethod
    def _write_points(self, handle: Any, points: list[Any]) -> None: ...

    @abstractmethod
    def _delete_points(self, handle: Any, point_ids: list[int | str]) -> None: ...

    @abstractmethod
    def _nearest(self, handle: Any, vector: list[float], using: str | None) -> Any:
        """The stored vector(s) of the nearest point, searched with vectors returned; None if there is none."""

    def _flush(self, handle: Any) -> None:
        pass

    @abstractmethod
    def _mode(self, layout: VectorLayout) -> tuple[str, bool, bool]:
        """(mode, vectors normalised, read from a snapshot) for ``describe().extra``."""

    @abstractmethod
    def _drop_snapshot(self) -> None: ...

    def describe(self) -> CollectionInfo:
        handle, layout = self._reading()
        mode, normalised, snapshot = self._mode(layout)
        return CollectionInfo(
            name=self.collection_name,
            dimension=layout.dimension,
            count=self._count(handle),
            metric=layout.metric,
            vector_names=layout.names,
            extra={
                "location": self.location,
                "mode": mode,
                "vector_name": layout.primary,
                "distances": {k: d for k, (_, d) in layout.dense.items()},
                "sparse_vectors": list(layout.sparse),
                "vectors_normalised": normalised,
                "snapshot": snapshot,
            },
        )

    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
        """Pages of at most ``batch_size`` points in id order; every batch carries a cursor."""
        if batch_size < 1:
            raise VdbguardError(f"batch_size must be at least 1, got {batch_size}")
        done, offset = decode_cursor(resume_from)
        if done:
            return
        handle, layout = self._reading()
        while True:
            points, next_id = self._scroll(handle, offset, batch_size)
            if points:
                yield layout.page(points, encode_cursor(next_id), self.collection_name)
            if next_id is None:
                return
            offset = next_id if isinstance(next_id, int) else str(next_id)

    def query_vector(self, vector: Sequence[float]) -> list[float] | None:
        handle, layout = self._reading()
        using = layout.primary if layout.named else None
        hit = self._nearest(handle, list(vector), using)
        if isinstance(hit, dict):
            hit = hit.get(using or "")
        return None if hit is None else [float(x) for x in hit]

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        handle, _ = self._writing()
        self._delete_points(handle, [point_id_of(record_id) for record_id in ids])
        self._flush(handle)
        self._drop_snapshot()

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Write ``records``; each replaces the stored point with its id entirely (payload and vectors)."""
        if not records:
            return
        handle, layout = self._writing()
        points = []
        for record in records:  # every record checked before anything is written
            payload = dict(record.payload)
            if record.text is not None:
                payload["text"] = record.text
            points.append(self._point(point_id_of(record.id), layout.point_vector(record), payload))
        for start in range(0, len(points), UPSERT_CHUNK):
            try:
                self._write_points(handle, points[start : start + UPSERT_CHUNK])
            except VdbguardError as exc:
                if start == 0:
                    raise
                raise PartialWriteError(exc, [r.id for r in records[:start]], len(records)) from exc
        self._flush(handle)
        self._drop_snapshot()
