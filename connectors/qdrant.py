"""Qdrant adapter: a Qdrant server over REST (``url``) or qdrant-client's local mode (``path``)."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import httpx
from qdrant_client import QdrantClient, models
from qdrant_client.common.client_exceptions import ResourceExhaustedResponse
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse
from vdbguard.connectors.qdrant_layout import PointsConnector, VectorLayout, distance_of
from vdbguard.connectors.support import (
    EmbeddedStore,
    ServerStore,
    Tls,
    as_bool,
    http_status_is_transient,
    require_path_or_url,
    server_url,
    tls_hint,
)

from vdbguard.credentials import scrub
from vdbguard.errors import CollectionNotFoundError, ConnectorError, VdbguardError

_SNAPSHOT_NAME = "c"
_KEY_HINT = "pass api_key=... (or set QDRANT_API_KEY); scans need a read key, upsert/ensure_collection a read-write key"
_SERVER_HINT = "is the server running, and are host, port (REST is 6333) and http/https right?"


class QdrantConnector(PointsConnector):
    """One Qdrant collection on a server (``url``, REST API) or in qdrant-client local mode (``path``).

    Reading: ``scroll`` pages in point-id order (unsigned integers first, then UUIDs), with payload and
    every vector. ``vector_name`` picks the named vector that becomes ``VectorRecord.vector`` (default:
    the alphabetically first, the order a server lists them in); ``named_vectors`` holds all dense
    named vectors of the point.
    Sparse vectors are not returned. Qdrant has no document field: ``text`` stays None and the payload
    is kept as is (the scanner looks for text under payload keys such as ``text``). Multivector
    (late-interaction) vectors come back as 2-D arrays, which the scanner reports as unusable records.

    Cursors are ``{"next": ID}``, the point id the next page starts at (Qdrant's own scroll offset,
    which is inclusive), ``{"next": null}`` after the last page. Because paging is by id, not by
    position, writes during a scan or between a scan and its resumption never make a point appear
    twice: a point inserted behind the cursor is missed by this pass, one inserted ahead is read,
    deleted points are simply not returned, a point updated after its page was read keeps its old
    value in this pass.

    What ``.vector`` holds for Cosine collections: a Qdrant *server* L2-normalises vectors of a
    Cosine collection on insert and only keeps the normalised ones, so that is what a scan returns
    (``describe().extra["vectors_normalised"]`` says so). Local mode keeps the vectors as written in
    its sqlite file and normalises only its in-memory copy: a live local client hands back normalised
    vectors, one that reopens the folder the raw ones (measured, qdrant-client 1.20). This connector
    always reads local mode from the file (see below), so it returns the vectors as written.

    Local mode, read-only guarantee: qdrant-client takes an exclusive lock on the folder, loads every
    collection into memory and may rewrite files on open (it creates ``meta.json`` and ``.lock``
    when missing and deletes duplicate rows left by older versions). So with ``snapshot=True`` (the
    default) reads never open the store: the collection's ``storage.sqlite`` is copied with SQLite's
    online backup API (a consistent copy, even while the owning application writes) into a private
    temp folder with a ``meta.json`` naming only this collection, and that copy is opened. The copy is
    made on the first read and deleted by ``close()`` (or by ``upsert``, so later reads see the new
    points). ``snapshot=False`` opens the store itself, which fails while another process holds it.
    Writes open the store itself (the same lock applies). ``location=":memory:"`` lives and dies
    inside one process, so there is nothing to scan from here; it is not supported.

    Server mode: ``api_key`` (or the ``QDRANT_API_KEY`` environment variable) is sent as the
    ``api-key`` header and never logged or put in error messages; a URL without a scheme means
    ``http://``, one without a port means 6333. Timeouts, connection errors, 429 and 5xx answers are
    retried with backoff. Only the REST API is used (``prefer_grpc`` is off).

    ``upsert`` writes whole points (Qdrant's upsert replaces payload and every vector of the point):
    ``named_vectors`` plus ``vector`` under the ``vector_name`` name (a record whose ``vector`` and
    ``named_vectors[vector_name]`` differ is refused);
    ``record.text``, when not None, is stored in the payload under ``"text"``. Record ids must be
    unsigned integers or UUIDs, the only point ids Qdrant has.
    """

    name: ClassVar[str] = "qdrant"

    def __init__(
        self,
        *,
        collection: str,
        url: str | None = None,
        path: str | Path | None = None,
        api_key: str | None = None,
        vector_name: str | None = None,
        snapshot: bool | str = True,
        timeout: int | str = 10,
        tls_verify: bool | str = True,
    ) -> None:
        require_path_or_url(
            "qdrant",
            path,
            url,
            "pass path=DIR for a local-mode folder (QdrantClient(path=DIR)) or url=http://HOST:6333 for a server",
        )
        if path is not None and str(path) == ":memory:":
            raise VdbguardError(
                "an in-memory Qdrant (':memory:') exists only inside the process that made it",
                "scan a local-mode folder (path=DIR) or a server (url=...)",
            )
        self.collection_name = collection
        self.vector_name = str(vector_name) if vector_name not in (None, "") else None  # CLI may pass an int
        self.snapshot = as_bool(snapshot, "snapshot")
        self.timeout = max(1, int(float(timeout)))
        self._store: _Server | _Local
        if path is not None:
            self._store = _Local(Path(path).expanduser(), self.snapshot, collection)
        else:
            assert url is not None
            key = api_key if api_key is not None else os.environ.get("QDRANT_API_KEY")
            self._store = _Server(url, str(key) if key else None, self.timeout, tls_verify)
        self.location = self._store.location
        self._read_layout: VectorLayout | None = None
        self._write_layout: VectorLayout | None = None

    # -- engine calls --------------------------------------------------------------------------

    def _layout(self, client: QdrantClient, name: str) -> VectorLayout:
        info = self._call("get_collection", client.get_collection, name)
        params = info.config.params
        vectors = params.vectors
        if isinstance(vectors, models.VectorParams):
            dense, named = {"": (vectors.size, _distance(vectors.distance))}, False
        else:
            dense, named = {k: (v.size, _distance(v.distance)) for k, v in (vectors or {}).items()}, True
        return VectorLayout.build(
            dense,
            named=named,
            vector_name=self.vector_name,
            where=f"Qdrant collection {self.collection_name!r} at {self.location}",
            sparse=tuple(params.sparse_vectors or ()),
        )

    def _reading(self) -> tuple[tuple[QdrantClient, str], VectorLayout]:
        handle = self._store.reader(), _SNAPSHOT_NAME if self._store.snapshot else self.collection_name
        if self._read_layout is None:
            self._read_layout = self._layout(*handle)
        return handle, self._read_layout

    def _writing(self) -> tuple[tuple[QdrantClient, str], VectorLayout]:
        handle = self._store.writer(), self.collection_name
        if self._write_layout is None:
            self._write_layout = self._layout(*handle)
        return handle, self._write_layout

    def _count(self, handle: tuple[QdrantClient, str]) -> int:
        client, name = handle
        return int(self._call("count", client.count, name, exact=True).count)

    def _scroll(self, handle: tuple[QdrantClient, str], offset: int | str | None, limit: int) -> Any:
        client, name = handle
        return self._call(
            "scroll", client.scroll, name, limit=limit, offset=offset, with_payload=True, with_vectors=True
        )

    def _point(self, point_id: int | str, vector: Any, payload: dict[str, Any]) -> models.PointStruct:
        return models.PointStruct(id=point_id, vector=vector, payload=payload)

    def _write_points(self, handle: tuple[QdrantClient, str], points: list[models.PointStruct]) -> None:
        client, name = handle
        self._call("upsert", client.upsert, name, points=points, wait=True)

    def _delete_points(self, handle: tuple[QdrantClient, str], point_ids: list[int | str]) -> None:
        client, name = handle
        self._call("delete", client.delete, name, points_selector=models.PointIdsList(points=point_ids), wait=True)

    def _nearest(self, handle: tuple[QdrantClient, str], vector: list[float], using: str | None) -> Any:
        client, name = handle
        found = self._call(
            "query_points", client.query_points, name, query=vector, using=using, limit=1, with_vectors=True
        )
        return found.points[0].vector if found.points else None

    def _mode(self, layout: VectorLayout) -> tuple[str, bool, bool]:
        return self._store.mode, self._store.remote and layout.distance == "Cosine", self._store.snapshot

    def _drop_snapshot(self) -> None:
        self._read_layout = None
        self._store.drop_snapshot()

    # -- errors --------------------------------------------------------------------------------

    store: ClassVar[str] = "Qdrant"

    def _retries(self) -> bool:
        return self._store.remote

    def _transient(self, exc: BaseException) -> bool:
        """Connection drops, timeouts, 429 and 5xx answers are worth retrying."""
        if isinstance(exc, ResourceExhaustedResponse):
            return True
        if isinstance(exc, UnexpectedResponse):
            return http_status_is_transient(exc.status_code)
        if isinstance(exc, ResponseHandlingException):
            return isinstance(exc.source, httpx.TransportError)
        return isinstance(exc, httpx.TransportError)

    def _scrub(self, text: str) -> str:
        return self._store.scrub(text)

    def _failed(self, what: str, exc: BaseException) -> VdbguardError:
        if isinstance(exc, UnexpectedResponse):
            status = exc.status_code
            if status in (401, 403):
                return ConnectorError(
                    f"Qdrant at {self.location} refused the credentials (HTTP {status}): "
                    "the API key is missing, wrong, or read-only for this operation",
                    _KEY_HINT,
                )
            if status == 404 and b"ollection" in (exc.content or b""):
                return self._not_found()
            return ConnectorError(
                f"{self._where(what)} failed: HTTP {status}: {self._scrub(_detail(exc))}", _SERVER_HINT
            )
        source = exc.source if isinstance(exc, ResponseHandlingException) else exc
        if isinstance(source, httpx.TransportError):
            return ConnectorError(
                f"cannot reach Qdrant at {self.location}: {type(source).__name__}: {self._scrub(str(source))}",
                _SERVER_HINT + tls_hint(source),
            )
        if not self._store.remote and isinstance(exc, ValueError) and "not found" in str(exc):
            return self._not_found()
        return self._failure(what, exc)

    def _not_found(self) -> CollectionNotFoundError:
        try:
            names = self._store.collections()
        except Exception:
            names = []
        return _not_found(self.collection_name, self.location, names)

    # -- Connector API -------------------------------------------------------------------------

    def _collection_names(self) -> list[str]:
        """A server's ``GET /collections``; local mode's own catalogue, its ``meta.json`` (opening the folder with
        the client would lock it and may rewrite it: see the class doc). Aliases are not listed: each names a
        collection that is."""
        return self._call("list collections", self._store.collections)

    def ensure_collection(self, dimension: int, metric: str = "cosine", vector_names: Sequence[str] = ()) -> None:
        params = models.VectorParams(size=int(dimension), distance=models.Distance(distance_of(metric, "Qdrant")))
        config: Any = {n: params for n in vector_names} if vector_names else params
        client, name = self._store.writer(), self.collection_name
        if not self._call("collection_exists", client.collection_exists, name):
            try:
                self._call("create_collection", client.create_collection, name, vectors_config=config)
            except ConnectorError as exc:
                if not self._call("collection_exists", client.collection_exists, name):  # lost a creation race?
                    raise exc from None
        self._write_layout = None
        self._drop_snapshot()

    def close(self) -> None:
        self._drop_snapshot()
        self._store.close()
        self._write_layout = None


class _Server(ServerStore):
    """A Qdrant server over REST."""

    mode = "server"

    def __init__(self, url: str, api_key: str | None, timeout: int, tls_verify: bool | str) -> None:
        self._api_key = api_key
        self._timeout = timeout
        parts = server_url(url, "Qdrant", 6333, with_path=True)
        self._loopback = parts.hostname in ("localhost", "127.0.0.1", "::1")
        self.location = parts.location + parts.path
        self._tls = Tls(tls_verify, self.location) if parts.secure else None

    def scrub(self, text: str) -> str:
        return scrub(text, [self._api_key])

    def _connect(self) -> QdrantClient:
        try:
            with warnings.catch_warnings():
                if self._loopback:  # a key sent in clear text over loopback does not leave the machine
                    warnings.filterwarnings("ignore", "Api key is used with an insecure connection")
                return QdrantClient(
                    url=self.location,
                    api_key=self._api_key,
                    timeout=self._timeout,
                    prefer_grpc=False,
                    check_compatibility=False,
                    **({"verify": self._tls.context()} if self._tls is not None else {}),
                )
        except Exception as exc:
            raise ConnectorError(f"cannot set up a Qdrant client for {self.location}: {self.scrub(str(exc))}") from exc

    def collections(self) -> list[str]:
        return sorted(c.name for c in self.reader().get_collections().collections)


class _Local(EmbeddedStore):
    """qdrant-client local mode: a folder that one client at a time may open (see the class doc)."""

    mode = "local"
    copy_prefix = "qdrant"
    described_as = "the Qdrant local storage"
    open_hint = "point path at the folder given to QdrantClient(path=...)"

    def __init__(self, path: Path, snapshot: bool, collection: str) -> None:
        super().__init__(path, snapshot)
        self._collection = collection

    def scrub(self, text: str) -> str:
        return text

    def _connect(self, path: Path) -> QdrantClient:
        return QdrantClient(path=str(path))

    def _open_failed(self, exc: Exception) -> ConnectorError:
        if not isinstance(exc, RuntimeError):
            return super()._open_failed(exc)
        if "already accessed" not in str(exc):
            return ConnectorError(f"cannot open {self.described_as} at {self.location}: {exc}")
        return ConnectorError(
            f"{self.described_as} at {self.location} is held by another process",
            "local mode allows one client at a time: scan with snapshot=True (the default), "
            "stop the application holding it for writes, or serve the data with a Qdrant server",
        )

    def _check(self) -> None:
        self.meta()  # a missing store is an error, not something to create

    def meta(self) -> dict[str, Any]:
        meta_path = self.path / "meta.json"
        if not meta_path.is_file():
            raise ConnectorError(
                f"no Qdrant local-mode storage at {self.location} (meta.json is missing)",
                "point path at the folder given to QdrantClient(path=...)",
            )
        try:
            meta = json.loads(meta_path.read_text())
            if not isinstance(meta["collections"], dict):
                raise TypeError("collections is not a mapping")
        except (ValueError, KeyError, TypeError) as exc:
            raise ConnectorError(f"unreadable Qdrant local-mode meta.json at {self.location}: {exc}") from exc
        return meta

    def _copy_store(self, target: Path) -> None:
        """SQLite's online backup of the collection's file (consistent even while its owner writes) and a
        ``meta.json`` naming only that collection."""
        meta = self.meta()
        real = self._resolve(meta)
        collection = target / "collection" / _SNAPSHOT_NAME
        collection.mkdir(parents=True)
        source = self.path / "collection" / real / "storage.sqlite"
        if source.is_file():
            try:
                _sqlite_backup(source, collection / "storage.sqlite")
            except (sqlite3.Error, OSError) as exc:
                raise ConnectorError(
                    f"cannot copy Qdrant collection {self._collection!r} from {self.location}: {exc}",
                    "check read permissions on the storage folder",
                ) from exc
        text_indexes = meta.get("text_indexes", {}).get(real)
        small = {
            "collections": {_SNAPSHOT_NAME: meta["collections"][real]},
            "aliases": {},
            **({"text_indexes": {_SNAPSHOT_NAME: text_indexes}} if text_indexes else {}),
        }
        (target / "meta.json").write_text(json.dumps(small))

    def _resolve(self, meta: dict[str, Any]) -> str:
        if self._collection in meta["collections"]:
            return self._collection
        alias = (meta.get("aliases") or {}).get(self._collection)
        if alias in meta["collections"]:
            return str(alias)
        raise _not_found(self._collection, self.location, sorted(meta["collections"]))

    def collections(self) -> list[str]:
        return sorted(self.meta()["collections"])


def _not_found(collection: str, location: str, names: Sequence[str]) -> CollectionNotFoundError:
    return CollectionNotFoundError(
        f"Qdrant collection {collection!r} not found at {location}",
        f"existing collections: {', '.join(names) if names else 'none'}",
    )


def _detail(exc: UnexpectedResponse) -> str:
    try:
        return str(exc.structured()["status"]["error"])
    except Exception:
        return exc.reason_phrase or "unexpected response"


def _distance(distance: Any) -> str:
    return str(getattr(distance, "value", distance))


def _sqlite_backup(source: Path, target: Path) -> None:
    """A consistent copy of a live SQLite file, opened read-only (SQLite's online backup API)."""
    with (
        contextlib.closing(sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)) as src,
        contextlib.closing(sqlite3.connect(str(target))) as dst,
    ):
        src.backup(dst)
