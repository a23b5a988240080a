"""Qdrant Edge adapter: shards of ``qdrant-edge-py`` (Qdrant's Rust engine, in process) on disk."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import qdrant_edge
from vdbguard.connectors.base import CollectionInfo, Connector
from vdbguard.connectors.qdrant import (
    VectorLayout,
    as_bool,
    copy_tree_sparse,
    decode_cursor,
    encode_cursor,
    point_id_of,
)

from vdbguard.errors import CollectionNotFoundError, ConnectorError, VdbguardError
from vdbguard.records import Batch, VectorRecord

_DISTANCES = {"cosine": "Cosine", "l2": "Euclid", "euclid": "Euclid", "ip": "Dot", "dot": "Dot"}
_UPSERT_CHUNK = 256
_CONFIG = "edge_config.json"


def _is_shard(path: Path) -> bool:
    return path.is_dir() and ((path / _CONFIG).is_file() or (path / "segments").is_dir())


class QdrantEdgeConnector(Connector):
    """One Qdrant Edge shard (``qdrant_edge.EdgeShard``), i.e. one collection, read from its folder.

    ``path`` is either a folder of shards, one sub-folder per collection (``path/<collection>``), or
    a shard folder itself whose name is ``collection``. An edge shard has no server and no API key.

    Reading: ``EdgeShard.scroll`` in point-id order (unsigned integers first, then UUIDs), with payload
    and every vector; ``vector_name`` picks the named vector that becomes ``VectorRecord.vector``
    (default: the alphabetically first; the order of names in ``edge_config.json`` is not stable),
    ``named_vectors`` holds all dense named vectors.
    Cursors are ``{"next": ID}`` (the inclusive scroll offset, ``null`` after the last page), so
    writes between pages never make a point appear twice (see the ``qdrant`` connector).

    Read-only guarantee: loading a shard takes an exclusive lock on its write-ahead log (a second
    ``load`` of the same folder fails while one is open) and loading or closing it rewrites files
    (``edge_config.json``, ``segment.json``, the payload tracker journal; measured with
    qdrant-edge-py 0.9). So with ``snapshot=True`` (the default) reads open a private copy of the shard
    folder, made under the temp dir on the first read (sparse-aware: the 32 MiB preallocated WAL and
    vector files cost only their written blocks) and deleted by ``close()`` or by ``upsert``. A copy
    taken while another process writes the shard may be torn: snapshot a quiescent (flushed) shard.
    ``snapshot=False`` opens the shard itself; it then fails while another process holds it and the
    engine will touch its files.

    Engine caveats (measured): vectors of a Cosine shard are L2-normalised on insert and only the
    normalised ones are kept, so that is what ``.vector`` holds (``describe().extra
    ["vectors_normalised"]``); NaN components are accepted by the engine, so ``upsert`` checks every
    vector first and writes nothing if one record is bad. ``upsert`` replaces whole points (payload
    and vectors); ``record.text``, when not None, goes to the payload under ``"text"``; record ids
    must be unsigned integers or UUIDs. Writes are flushed before ``upsert`` returns.
    """

    name: ClassVar[str] = "qdrant-edge"
    extra: ClassVar[str] = "qdrant"

    def __init__(
        self,
        *,
        collection: str,
        path: str | Path,
        vector_name: str | None = None,
        snapshot: bool | str = True,
    ) -> None:
        if not collection or collection in (".", "..") or "/" in collection or "\\" in collection:
            raise VdbguardError(f"bad Qdrant Edge collection name {collection!r}", "use the shard folder's name")
        self.collection_name = collection
        self.vector_name = str(vector_name) if vector_name not in (None, "") else None  # CLI may pass an int
        self.snapshot = as_bool(snapshot, "snapshot")
        self.root = Path(path).expanduser()
        self.location = str(self.root)
        self._reader: Any = None
        self._writer: Any = None
        self._read_layout: VectorLayout | None = None
        self._write_layout: VectorLayout | None = None
        self._cleanup: weakref.finalize | None = None

    # -- shards --------------------------------------------------------------------------------

    def _shard_path(self) -> Path | None:
        """Where this collection's shard lives, or None when it does not exist (yet)."""
        nested = self.root / self.collection_name
        if _is_shard(nested):
            return nested
        if _is_shard(self.root) and self.root.name == self.collection_name:
            return self.root
        return None

    def _existing(self) -> list[str]:
        if _is_shard(self.root):
            return [self.root.name]
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if _is_shard(p))

    def _not_found(self) -> CollectionNotFoundError:
        if not self.root.exists():
            return CollectionNotFoundError(
                f"Qdrant Edge collection {self.collection_name!r} not found: {self.location} does not exist",
                "point path at a shard folder or at a folder of shards",
            )
        existing = ", ".join(self._existing()) or "none"
        return CollectionNotFoundError(
            f"Qdrant Edge collection {self.collection_name!r} not found at {self.location}",
            f"existing shards: {existing}",
        )

    def _load(self, path: Path) -> Any:
        try:
            return qdrant_edge.EdgeShard.load(str(path))
        except Exception as exc:
            if "WouldBlock" in str(exc):
                raise ConnectorError(
                    f"the Qdrant Edge shard at {path} is held by another process",
                    "read it with snapshot=True (the default), or close the application holding it to write",
                ) from exc
            raise ConnectorError(f"cannot load the Qdrant Edge shard at {path}: {exc}") from exc

    def _read(self) -> tuple[Any, VectorLayout]:
        if self._reader is None:
            shard = self._shard_path()
            if shard is None:
                raise self._not_found()
            if self.snapshot:
                tmp = Path(tempfile.mkdtemp(prefix="vdbguard-qdrant-edge-"))
                self._cleanup = weakref.finalize(self, shutil.rmtree, tmp, ignore_errors=True)
                copy = tmp / "shard"
                copy_tree_sparse(shard, copy)
                self._reader = self._load(copy)
                self._read_layout = self._layout(copy)
            else:
                self._reader = self._writer if self._writer is not None else self._load(shard)
                self._read_layout = self._layout(shard)
        assert self._read_layout is not None
        return self._reader, self._read_layout

    def _write(self) -> tuple[Any, VectorLayout]:
        if self._writer is None:
            shard = self._shard_path()
            if shard is None:
                raise self._not_found()
            if self._reader is not None and not self.snapshot:
                self._writer = self._reader
            else:
                self._writer = self._load(shard)
        if self._write_layout is None:
            shard = self._shard_path()
            assert shard is not None
            self._write_layout = self._layout(shard)
        return self._writer, self._write_layout

    def _layout(self, shard: Path) -> VectorLayout:
        try:
            config = json.loads((shard / _CONFIG).read_text())
        except (OSError, ValueError) as exc:
            raise ConnectorError(f"cannot read the config of the Qdrant Edge shard at {shard}: {exc}") from exc
        vectors = config.get("vectors") or {}
        dense = {name: (int(v["size"]), str(v["distance"])) for name, v in vectors.items()}
        return VectorLayout.build(
            dense,
            named=list(dense) != [""],
            vector_name=self.vector_name,
            where=f"Qdrant Edge shard {self.collection_name!r} at {self.location}",
            sparse=tuple(config.get("sparse_vectors") or ()),
        )

    def _call(self, what: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:
            raise ConnectorError(
                f"Qdrant Edge {what} on {self.collection_name!r} at {self.location} failed: {exc}"
            ) from exc

    def _drop_snapshot(self) -> None:
        if self._reader is not None and self._reader is not self._writer:
            _close(self._reader)
        self._reader = None
        self._read_layout = None
        if self._cleanup is not None:
            self._cleanup()
            self._cleanup = None

    # -- Connector API -------------------------------------------------------------------------

    def describe(self) -> CollectionInfo:
        shard, layout = self._read()
        count = int(self._call("count", shard.count, qdrant_edge.CountRequest(exact=True)))
        return CollectionInfo(
            name=self.collection_name,
            dimension=layout.dimension,
            count=count,
            metric=layout.metric,
            vector_names=layout.names,
            extra={
                "location": self.location,
                "mode": "edge",
                "vector_name": layout.primary,
                "distances": {k: d for k, (_, d) in layout.dense.items()},
                "sparse_vectors": list(layout.sparse),
                "vectors_normalised": layout.distance == "Cosine",
                "snapshot": self.snapshot,
            },
        )

    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
        """Pages of at most ``batch_size`` points in id order; every batch carries a cursor."""
        if batch_size < 1:
            raise VdbguardError(f"batch_size must be at least 1, got {batch_size}")
        done, offset = decode_cursor(resume_from)
        if done:
            return
        shard, layout = self._read()
        while True:
            request = qdrant_edge.ScrollRequest(offset=offset, limit=batch_size, with_payload=True, with_vector=True)
            points, next_id = self._call("scroll", shard.scroll, request)
            records = [layout.record(p.id, p.vector, p.payload, self.collection_name) for p in points]
            if records:
                yield Batch(records, encode_cursor(next_id))
            if next_id is None:
                return
            offset = next_id if isinstance(next_id, int) else str(next_id)

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Write ``records`` (each replaces its point entirely) and flush them to disk."""
        if not records:
            return
        shard, layout = self._write()
        points = []
        for record in records:  # every record checked before anything is written
            payload = dict(record.payload)
            if record.text is not None:
                payload["text"] = record.text
            points.append(qdrant_edge.Point(point_id_of(record.id), layout.point_vector(record), payload))
        for start in range(0, len(points), _UPSERT_CHUNK):
            operation = qdrant_edge.UpdateOperation.upsert_points(points[start : start + _UPSERT_CHUNK])
            self._call("upsert", shard.update, operation)
        self._call("flush", shard.flush)
        self._drop_snapshot()

    def ensure_collection(self, dimension: int, metric: str = "cosine", vector_names: Sequence[str] = ()) -> None:
        if self._shard_path() is not None:
            return
        distance = _DISTANCES.get(metric.lower())
        if distance is None:
            raise VdbguardError(f"unknown metric {metric!r} for Qdrant Edge", "use cosine, l2 or ip")
        params = qdrant_edge.EdgeVectorParams(size=int(dimension), distance=getattr(qdrant_edge.Distance, distance))
        vectors: Any = {n: params for n in vector_names} if vector_names else params
        target = self.root / self.collection_name
        try:
            self._writer = qdrant_edge.EdgeShard.create(str(target), qdrant_edge.EdgeConfig(vectors=vectors))
        except Exception as exc:
            raise ConnectorError(f"cannot create the Qdrant Edge shard at {target}: {exc}") from exc
        self._write_layout = None
        self._drop_snapshot()

    def close(self) -> None:
        self._drop_snapshot()
        if self._writer is not None:
            _close(self._writer)
        self._writer = None
        self._write_layout = None


def _close(shard: Any) -> None:
    with contextlib.suppress(Exception):  # closing twice, or a shard that failed to load
        shard.close()
