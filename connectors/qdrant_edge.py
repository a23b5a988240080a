"""Qdrant Edge adapter: shards of ``qdrant-edge-py`` (Qdrant's Rust engine, in process) on disk."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import qdrant_edge
from vdbguard.connectors.qdrant_layout import PointsConnector, VectorLayout, distance_of
from vdbguard.connectors.support import PrivateCopy, as_bool, close_quietly, copy_tree_sparse

from vdbguard.errors import CollectionNotFoundError, ConnectorError, VdbguardError

_CONFIG = "edge_config.json"


def _is_shard(path: Path) -> bool:
    return path.is_dir() and ((path / _CONFIG).is_file() or (path / "segments").is_dir())


class QdrantEdgeConnector(PointsConnector):
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
        self._copy: PrivateCopy | None = None

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

    def _reading(self) -> tuple[Any, VectorLayout]:
        if self._reader is None:
            shard = self._shard_path()
            if shard is None:
                raise self._not_found()
            if self.snapshot:
                self._copy = PrivateCopy(shard, store="qdrant-edge", name="shard", copy=copy_tree_sparse)
                self._reader = self._load(self._copy.path)
                self._read_layout = self._layout(self._copy.path)
            else:
                self._reader = self._writer if self._writer is not None else self._load(shard)
                self._read_layout = self._layout(shard)
        assert self._read_layout is not None
        return self._reader, self._read_layout

    def _writing(self) -> tuple[Any, VectorLayout]:
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

    # -- engine calls (in process: nothing is transient) ---------------------------------------

    store: ClassVar[str] = "Qdrant Edge"

    def _retries(self) -> bool:
        return False

    def _detail(self, exc: BaseException) -> str:
        return str(exc)

    def _count(self, shard: Any) -> int:
        return int(self._call("count", shard.count, qdrant_edge.CountRequest(exact=True)))

    def _scroll(self, shard: Any, offset: int | str | None, limit: int) -> Any:
        request = qdrant_edge.ScrollRequest(offset=offset, limit=limit, with_payload=True, with_vector=True)
        return self._call("scroll", shard.scroll, request)

    def _nearest(self, shard: Any, vector: list[float], using: str | None) -> Any:
        request = qdrant_edge.QueryRequest(
            limit=1, query=qdrant_edge.Query.Nearest(vector, using=using), with_vector=True, with_payload=False
        )
        found = self._call("query", shard.query, request)
        return found[0].vector if found else None

    def _point(self, point_id: int | str, vector: Any, payload: dict[str, Any]) -> Any:
        return qdrant_edge.Point(point_id, vector, payload)

    def _write_points(self, shard: Any, points: list[Any]) -> None:
        self._call("upsert", shard.update, qdrant_edge.UpdateOperation.upsert_points(points))

    def _delete_points(self, shard: Any, point_ids: list[int | str]) -> None:
        self._call("delete", shard.update, qdrant_edge.UpdateOperation.delete_points(point_ids))

    def _flush(self, shard: Any) -> None:
        """Writes are flushed before ``upsert`` returns."""
        self._call("flush", shard.flush)

    def _mode(self, layout: VectorLayout) -> tuple[str, bool, bool]:
        return "edge", layout.distance == "Cosine", self.snapshot

    def _drop_snapshot(self) -> None:
        if self._reader is not None and self._reader is not self._writer:
            close_quietly(self._reader)
        self._reader = None
        self._read_layout = None
        if self._copy is not None:
            self._copy.drop()
            self._copy = None

    # -- Connector API -------------------------------------------------------------------------

    def _collection_names(self) -> list[str]:
        """The shard folders under ``path`` (or ``path`` itself when it is a shard): Edge keeps no catalogue, each
        shard is one collection. Only names are read; no shard is loaded."""
        if not self.root.is_dir():
            raise ConnectorError(
                f"Qdrant Edge path {self.location} does not exist or is not a directory",
                "point path at a shard folder or at a folder of shards",
            )
        return self._existing()

    def ensure_collection(self, dimension: int, metric: str = "cosine", vector_names: Sequence[str] = ()) -> None:
        if self._shard_path() is not None:
            return
        distance = getattr(qdrant_edge.Distance, distance_of(metric, "Qdrant Edge"))
        params = qdrant_edge.EdgeVectorParams(size=int(dimension), distance=distance)
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
            close_quietly(self._writer)
        self._writer = None
        self._write_layout = None
