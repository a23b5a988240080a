"""Chroma adapter: an embedded store (a persist directory) or a running ``chroma run`` server."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import chromadb
import httpx
import numpy as np
from chromadb.config import DEFAULT_DATABASE, DEFAULT_TENANT, Settings
from chromadb.errors import NotFoundError
from vdbguard.connectors.base import CollectionInfo, Connector
from vdbguard.connectors.support import (
    EmbeddedStore,
    ServerStore,
    StoreCalls,
    Tls,
    http_status_is_transient,
    require_path_or_url,
    server_url,
    tls_hint,
)

from vdbguard.errors import CollectionNotFoundError, ConnectorError, PartialWriteError, VdbguardError
from vdbguard.records import Batch, Columns, VectorRecord, payload_bytes

_CURSOR = re.compile(r"offset:(\d+)")
_INCLUDE: Any = ["embeddings", "documents", "metadatas"]
_LIST_PAGE = 100  # collections a list_collections call asks for
_START_HINT = "is the server running? start one with `chroma run --path DIR --host 127.0.0.1 --port PORT`"


class ChromaConnector(StoreCalls, Connector):
    """One Chroma collection, embedded (``path``) or over HTTP (``url``); give exactly one of them.

    Read-only guarantee (embedded mode): chromadb 1.5.x rewrites ``chroma.sqlite3`` and the HNSW
    segment files whenever a ``PersistentClient`` opens a collection and reads from it, even without
    any write. So with ``snapshot=True`` (the default) reads open a private copy of the persist
    directory under the temp dir, made on first read and deleted by ``close()``; the store itself is
    never opened for reading. The copy holds ``chroma.sqlite3`` and this collection's index, not the
    other collections' (so it costs disk space and time in proportion to the database and this
    collection), and a copy taken while another process writes may be torn: snapshot a quiescent store.
    ``snapshot=False`` reads the store in place (Chroma will touch its files).
    ``upsert()`` always writes to the real store, through a client opened lazily on first write; it
    drops the current snapshot so that later reads see the new rows.

    Server mode reads and writes through ``chromadb.HttpClient``; ``headers`` (e.g. auth tokens) are
    sent with every request and never logged or put in error messages. Over https the server's
    certificate is verified: ``tls_verify`` is True (the system's CAs), a CA file, or False (warned).

    Cursors are ``"offset:N"``. Offsets are positional (Chroma's ``get(limit, offset)``), so rows
    inserted or deleted while a scan is running, or between a scan and its resumption, shift the
    pages: rows can be skipped or seen twice. Scan a snapshot (the embedded default; a new connector
    resuming a cursor takes a new snapshot, which matches only if the store did not change) or a
    server no one writes to.

    Records can only be written with an explicit, finite vector: collections are created without an
    embedding function (Chroma would otherwise try to download an ONNX model).
    """

    name: ClassVar[str] = "chroma"

    def __init__(
        self,
        *,
        collection: str,
        path: str | Path | None = None,
        url: str | None = None,
        headers: dict[str, str] | None = None,
        tenant: str = DEFAULT_TENANT,
        database: str = DEFAULT_DATABASE,
        snapshot: bool = True,
        create: bool = False,
        metric: str = "l2",
        tls_verify: bool | str = True,
    ) -> None:
        require_path_or_url(
            "chroma", path, url, "pass path=DIR for an embedded store or url=http://HOST:PORT for a `chroma run` server"
        )
        self.collection_name = collection
        self.tenant = tenant
        self.database = database
        self.snapshot = snapshot
        self.create = create
        self.metric = metric
        self._store: _Server | _Local
        if path is not None:
            self._store = _Local(Path(path).expanduser(), snapshot, create, tenant, database, collection)
        else:
            assert url is not None
            self._store = _Server(url, dict(headers) if headers else None, tenant, database, tls_verify)
        self.location = self._store.location
        self._read_col: Any = None
        self._write_col: Any = None

    # -- connection handling -------------------------------------------------------------------

    def _open_collection(self, client: Any) -> Any:
        try:
            return client.get_collection(self.collection_name, embedding_function=None)
        except NotFoundError as exc:
            raise self._not_found(client) from exc
        except ValueError as exc:  # older clients report a missing collection this way
            if "does not exist" not in str(exc):
                raise self._failed("get_collection", exc) from exc
            raise self._not_found(client) from exc
        except Exception as exc:
            raise self._failed("get_collection", exc) from exc

    def _not_found(self, client: Any) -> CollectionNotFoundError:
        try:
            names = sorted(getattr(c, "name", str(c)) for c in client.list_collections())
        except Exception:
            names = []
        existing = ", ".join(names) if names else "none"
        return CollectionNotFoundError(
            f"Chroma collection {self.collection_name!r} not found at {self.location}",
            f"existing collections: {existing}",
        )

    def _reader(self) -> Any:
        if self._read_col is None:
            self._store.drop_snapshot()  # a copy in which the collection could not be opened is stale
            self._read_col = self._open_collection(self._store.reader())
        return self._read_col

    def _writer(self) -> Any:
        if self._write_col is not None:
            return self._write_col
        client = self._store.writer()
        if self.create:
            self._write_col = self._call(
                "get_or_create_collection",
                client.get_or_create_collection,
                self.collection_name,
                embedding_function=None,
                configuration={"hnsw": {"space": self.metric}},
            )
        else:
            self._write_col = self._open_collection(client)
        return self._write_col

    def _drop_snapshot(self) -> None:
        if self._store.drop_snapshot():
            self._read_col = None

    store: ClassVar[str] = "Chroma"

    def _retries(self) -> bool:
        return self._store.remote

    def _transient(self, exc: BaseException) -> bool:
        """Connection drops, timeouts and 429/5xx answers from a Chroma server are worth retrying."""
        if isinstance(exc, httpx.TransportError):
            return True
        response = getattr(exc, "response", None)
        return http_status_is_transient(getattr(response, "status_code", None))

    def _failed(self, what: str, exc: BaseException) -> ConnectorError:
        return self._failure(what, exc, _START_HINT if self._store.remote else None)

    # -- Connector API -------------------------------------------------------------------------

    def _collection_names(self) -> list[str]:
        """The collections of this tenant and database, a page of ``list_collections`` at a time (a server may
        hold many). An embedded store is listed in its private copy, which holds no collection's index."""
        client = self._store.reader()
        names: list[str] = []
        while True:
            page = self._call("list_collections", client.list_collections, limit=_LIST_PAGE, offset=len(names))
            names += [getattr(c, "name", str(c)) for c in page]
            if len(page) < _LIST_PAGE:
                return names

    def ensure_collection(self, dimension: int, metric: str = "cosine", vector_names: Sequence[str] = ()) -> None:
        if len(vector_names) > 1:
            raise VdbguardError("Chroma stores one vector per record", "use one collection per vector name")
        self.metric, self.create, self._write_col = metric, True, None
        self._writer()
        self._drop_snapshot()

    def describe(self) -> CollectionInfo:
        col = self._reader()
        count = int(self._call("count", col.count))
        dimension = getattr(col.get_model(), "dimension", None) if hasattr(col, "get_model") else None
        if dimension is None and count:
            first = self._call("get", col.get, limit=1, include=["embeddings"])
            embeddings = first.get("embeddings")
            if embeddings is not None and len(embeddings) and embeddings[0] is not None:
                dimension = len(embeddings[0])
        return CollectionInfo(
            name=self.collection_name,
            dimension=int(dimension) if dimension is not None else None,
            count=count,
            metric=_metric(col),
            extra={"tenant": self.tenant, "database": self.database, "location": self.location},
        )

    def query_vector(self, vector: Sequence[float]) -> list[float] | None:
        found = self._call(
            "query", self._reader().query, query_embeddings=[list(vector)], n_results=1, include=["embeddings"]
        )
        embeddings = found.get("embeddings")
        hits = embeddings[0] if embeddings is not None and len(embeddings) else None
        return None if hits is None or not len(hits) or hits[0] is None else [float(x) for x in hits[0]]

    def content_version(self) -> str | None:
        """Embedded stores only: the collection's id with the last write its segments applied and the last one
        its log holds. Chroma numbers every write in one sequence that only grows (a segment records the last
        number it applied and skips any at or below it), so a write to this collection changes it, and a
        collection made again has another id. Read from the store's database read-only, before any copy."""
        return self._store.content_version() if isinstance(self._store, _Local) else None

    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
        """Pages of ``batch_size`` records in Chroma's storage order.

        Every batch carries a cursor, the last one included (resuming from it yields nothing).
        """
        if batch_size < 1:
            raise VdbguardError(f"batch_size must be at least 1, got {batch_size}")
        offset = 0
        if resume_from is not None:
            match = _CURSOR.fullmatch(resume_from)
            if match is None:
                raise VdbguardError(
                    f"bad Chroma resume cursor {resume_from!r}",
                    "pass a cursor taken from a chroma scan (like 'offset:512'), or none to start over",
                )
            offset = int(match.group(1))
        col = self._reader()
        while True:
            page = self._call("get", col.get, limit=batch_size, offset=offset, include=_INCLUDE)
            ids = page["ids"]
            if not ids:
                return
            offset += len(ids)
            yield Batch(None, f"offset:{offset}", self._columns(ids, page))
            if len(ids) < batch_size:
                return

    def _columns(self, ids: list[str], page: dict[str, Any]) -> Columns:
        """A page as columns: Chroma hands out one embedding matrix per page, so a row becomes a VectorRecord
        only when the scan attacks it. Payloads hash as the sorted JSON a record's digest uses."""
        embeddings, metadatas, documents = page.get("embeddings"), page.get("metadatas"), page.get("documents")
        matrix = np.asarray(embeddings if embeddings is not None else np.zeros((len(ids), 0)), dtype=np.float32)
        present = np.full(len(ids), embeddings is not None and matrix.ndim == 2 and matrix.shape[1] > 0)
        payloads = [dict(meta) if meta else {} for meta in metadatas or [None] * len(ids)]
        texts = list(documents) if documents is not None else [None] * len(ids)

        def record(i: int) -> VectorRecord:
            vector = matrix[i] if present[i] else None
            return VectorRecord(
                id=ids[i], vector=vector, payload=payloads[i], text=texts[i], collection=self.collection_name
            )

        stored = [payload_bytes(payload) for payload in payloads]
        return Columns(ids, matrix, present, stored, texts, record)

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._call("delete", self._writer().delete, ids=list(ids))
            self._drop_snapshot()

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Write ``records``, each replacing any stored row with its id entirely.

        Chroma's own upsert merges metadata into the stored row and keeps a stored document when the
        new one is None; so keys absent from ``payload`` are sent as None (Chroma deletes them), and
        rows whose document must go away are deleted and re-added (not atomic for those rows).
        """
        if not records:
            return
        vectors = [r.checked_vector().tolist() for r in records]  # RecordError for missing/NaN vectors
        col = self._writer()
        client = self._store.writer()
        step = max(int(client.get_max_batch_size()) if hasattr(client, "get_max_batch_size") else 1000, 1)
        changed: list[str] = []
        try:
            for start in range(0, len(records), step):
                self._upsert_chunk(col, records[start : start + step], vectors[start : start + step], changed)
        except VdbguardError as exc:
            if not changed:
                raise
            raise PartialWriteError(exc, changed, len(records)) from exc
        finally:
            self._drop_snapshot()

    def _upsert_chunk(self, col: Any, chunk: Sequence[VectorRecord], vectors: list[Any], changed: list[str]) -> None:
        """One ``upsert`` call (and the deletes it needs); ``changed`` gets the ids it touched."""
        ids = [r.id for r in chunk]
        stored = self._call("get", col.get, ids=ids, include=["metadatas", "documents"])
        found = stored["ids"]
        metas = stored.get("metadatas") or [None] * len(found)
        docs = stored.get("documents") or [None] * len(found)
        old = {i: (m or {}, d) for i, m, d in zip(found, metas, docs, strict=True)}
        drop = [r.id for r in chunk if r.text is None and old.get(r.id, ({}, None))[1] is not None]
        if drop:
            self._call("delete", col.delete, ids=drop)
            changed += drop
            for record_id in drop:
                old.pop(record_id)
        metadatas: list[dict[str, Any] | None] = []
        for r in chunk:
            meta = {key: None for key in old.get(r.id, ({}, None))[0] if key not in r.payload}
            meta.update(r.payload)
            metadatas.append(meta or None)
        documents = [r.text for r in chunk]
        self._call(
            "upsert",
            col.upsert,
            ids=ids,
            embeddings=vectors,
            metadatas=metadatas if any(m is not None for m in metadatas) else None,
            documents=documents if any(d is not None for d in documents) else None,
        )
        changed += [i for i in ids if i not in drop]

    def close(self) -> None:
        self._store.close()
        self._read_col = self._write_col = None


class _Server(ServerStore):
    """A ``chroma run`` server."""

    def __init__(
        self, url: str, headers: dict[str, str] | None, tenant: str, database: str, tls_verify: bool | str
    ) -> None:
        parts = server_url(url, "Chroma", 8000)
        self._ssl = parts.secure
        self._host, self._port = parts.hostname, parts.port
        self.location = parts.location
        self._headers = headers
        self._tenant = tenant
        self._database = database
        self._tls = Tls(tls_verify, self.location) if self._ssl else None

    def _connect(self) -> Any:
        settings = Settings(anonymized_telemetry=False)
        if self._tls is not None:
            settings.chroma_server_ssl_verify = self._tls.ca_file or self._tls.verify
        try:
            return chromadb.HttpClient(
                host=self._host,
                port=self._port,
                ssl=self._ssl,
                headers=self._headers,
                tenant=self._tenant,
                database=self._database,
                settings=settings,
            )
        except Exception as exc:
            raise ConnectorError(
                f"cannot connect to Chroma at {self.location}: {type(exc).__name__}: {exc}",
                f"{_START_HINT}; check the URL, tenant/database and auth headers{tls_hint(exc)}",
            ) from exc


class _Local(EmbeddedStore):
    """A persist directory: chromadb rewrites its files whenever a client opens it (see the class doc)."""

    copy_prefix = "chroma"
    described_as = "the Chroma store"
    open_hint = "check that the directory is a Chroma persist directory written by chromadb>=1.0"

    def __init__(self, path: Path, snapshot: bool, create: bool, tenant: str, database: str, collection: str) -> None:
        super().__init__(path, snapshot)
        self._collection = collection
        if path.exists() and not path.is_dir():
            raise ConnectorError(f"Chroma path {self.location} is not a directory")
        if not path.exists() and not create:
            raise ConnectorError(
                f"Chroma path {self.location} does not exist",
                "point path at a Chroma persist directory (the one holding chroma.sqlite3)",
            )
        self._tenant = tenant
        self._database = database

    def _check(self) -> None:
        if not self.path.is_dir():
            raise ConnectorError(f"Chroma path {self.location} does not exist", "nothing has been written there yet")

    def _connect(self, path: Path) -> Any:
        return chromadb.PersistentClient(path=str(path), tenant=self._tenant, database=self._database)

    def content_version(self) -> str | None:
        query = """
            SELECT c.id, MAX(m.seq_id), (SELECT MAX(q.seq_id) FROM embeddings_queue q WHERE q.topic LIKE '%/' || c.id)
            FROM collections c JOIN databases d ON c.database_id = d.id
            LEFT JOIN segments s ON s.collection = c.id LEFT JOIN max_seq_id m ON m.segment_id = s.id
            WHERE c.name = ? AND d.name = ? AND d.tenant_id = ? GROUP BY c.id
        """
        database = self.path / _DATABASE_FILE
        try:
            with contextlib.closing(sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)) as db:
                row = db.execute(query, (self._collection, self._database, self._tenant)).fetchone()
        except sqlite3.Error:  # another schema, or no database yet: no promise
            return None
        return None if row is None else json.dumps({"collection": row[0], "applied": row[1], "logged": row[2]})

    def _copy_store(self, target: Path) -> None:
        """The database and every folder but other collections' vector segments (each collection's index is a
        folder named by its segment id): the copy costs what this collection holds, not the whole store."""
        database = self.path / _DATABASE_FILE
        target.mkdir()
        if database.is_file():
            shutil.copy2(database, target / _DATABASE_FILE)
        others = _other_segments(target / _DATABASE_FILE, self._collection, self._tenant, self._database)
        for entry in self.path.iterdir():
            if entry.name == _DATABASE_FILE or entry.name in others:
                continue
            if entry.is_dir():
                shutil.copytree(entry, target / entry.name)
            else:
                shutil.copy2(entry, target / entry.name)


_DATABASE_FILE = "chroma.sqlite3"


def _other_segments(database: Path, collection: str, tenant: str, database_name: str) -> set[str]:
    """Segment ids of every other collection in a (copied) chroma.sqlite3; none when its schema is not the one
    known (chromadb 1.x), so that an unknown layout is copied whole."""
    query = """
        SELECT s.id FROM segments s JOIN collections c ON s.collection = c.id JOIN databases d ON c.database_id = d.id
        WHERE NOT (c.name = ? AND d.name = ? AND d.tenant_id = ?)
    """
    try:
        with contextlib.closing(sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)) as db:
            return {str(row[0]) for row in db.execute(query, (collection, database_name, tenant))}
    except sqlite3.Error:
        return set()


def _metric(col: Any) -> str:
    """The HNSW (or SPANN) distance space from the collection configuration, else legacy metadata."""
    try:
        config = col.configuration or {}
    except Exception:
        config = {}
    for index in ("hnsw", "spann"):
        space = (config.get(index) or {}).get("space")
        if space:
            return str(space)
    space = (col.metadata or {}).get("hnsw:space")
    return str(space) if space else "l2"
