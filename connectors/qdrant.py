"""Qdrant adapter: a Qdrant server over REST (``url``) or qdrant-client's local mode (``path``)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import sqlite3
import tempfile
import uuid
import warnings
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import httpx
import numpy as np
from qdrant_client import QdrantClient, models
from qdrant_client.common.client_exceptions import ResourceExhaustedResponse
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse
from vdbguard.connectors.base import CollectionInfo, Connector
from vdbguard.connectors.retry import http_status_is_transient, with_retries

from vdbguard.errors import CollectionNotFoundError, ConnectorError, RecordError, VdbguardError
from vdbguard.records import Batch, VectorRecord

_METRICS = {"cosine": "cosine", "euclid": "l2", "dot": "ip"}  # Qdrant distance (lower case) -> vdbguard metric
_DISTANCES = {"cosine": "Cosine", "l2": "Euclid", "euclid": "Euclid", "ip": "Dot", "dot": "Dot"}
_UPSERT_CHUNK = 256
_SNAPSHOT_NAME = "c"
_KEY_HINT = "pass api_key=... (or set QDRANT_API_KEY); scans need a read key, upsert/ensure_collection a read-write key"
_SERVER_HINT = "is the server running, and are host, port (REST is 6333) and http/https right?"


# -- helpers shared with connectors.qdrant_edge ----------------------------------------------------


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
        return _METRICS.get((self.distance or "").lower())

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


def as_bool(value: bool | str, option: str) -> bool:
    """Connector options arrive as strings from the CLI (``--option snapshot=false``)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise VdbguardError(f"option {option}={value!r} is not a boolean", "use true or false")


def copy_tree_sparse(src: Path, dst: Path) -> None:
    """``shutil.copytree`` that keeps holes: Qdrant preallocates sparse 32 MiB WAL and mmap files."""
    shutil.copytree(src, dst, copy_function=_copy_sparse)


def _copy_sparse(src: str, dst: str, *, follow_symlinks: bool = True) -> str:
    seek_data, seek_hole = getattr(os, "SEEK_DATA", None), getattr(os, "SEEK_HOLE", None)
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        size = os.fstat(fin.fileno()).st_size
        if seek_data is None or seek_hole is None:
            shutil.copyfileobj(fin, fout)
        else:
            position = 0
            while position < size:
                try:
                    start = os.lseek(fin.fileno(), position, seek_data)
                except OSError as exc:
                    if exc.errno == errno.ENXIO:  # only a hole is left
                        break
                    raise
                end = os.lseek(fin.fileno(), start, seek_hole)
                fin.seek(start)
                fout.seek(start)
                left = end - start
                while left > 0:
                    chunk = fin.read(min(left, 1 << 20))
                    if not chunk:
                        break
                    fout.write(chunk)
                    left -= len(chunk)
                position = end
        fout.truncate(size)
    shutil.copystat(src, dst)
    return dst


# -- the connector ---------------------------------------------------------------------------------


class QdrantConnector(Connector):
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
    extra: ClassVar[str] = "qdrant"

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
    ) -> None:
        if (url is None) == (path is None):
            raise VdbguardError(
                "the qdrant connector needs exactly one of path or url",
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
        self._path = Path(path).expanduser() if path is not None else None
        self._api_key: str | None = None
        self._url = ""
        self._loopback = False
        if self._path is not None:
            self.location = str(self._path)
        else:
            assert url is not None
            key = api_key if api_key is not None else os.environ.get("QDRANT_API_KEY")
            self._api_key = str(key) if key else None
            self._url = self._parse_url(url)
            self.location = self._url
        self._remote: QdrantClient | None = None
        self._read_client: QdrantClient | None = None
        self._write_client: QdrantClient | None = None
        self._read_layout: VectorLayout | None = None
        self._write_layout: VectorLayout | None = None
        self._snapshot_dir: Path | None = None
        self._cleanup: weakref.finalize | None = None

    # -- connection handling -------------------------------------------------------------------

    def _parse_url(self, url: str) -> str:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        shown = re.sub(r"//[^/@]*@", "//***@", url)  # never echo credentials embedded in the URL
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise VdbguardError(f"unsupported Qdrant URL {shown!r}", "use http(s)://HOST:PORT")
        try:
            port = parts.port or 6333
        except ValueError as exc:
            raise VdbguardError(f"bad port in Qdrant URL {shown!r}", "use http(s)://HOST:PORT") from exc
        self._loopback = parts.hostname in ("localhost", "127.0.0.1", "::1")
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        return f"{parts.scheme}://{host}:{port}{parts.path.rstrip('/')}"  # no userinfo, no query

    def _server(self) -> QdrantClient:
        if self._remote is None:
            try:
                with warnings.catch_warnings():
                    if self._loopback:  # a key sent in clear text over loopback does not leave the machine
                        warnings.filterwarnings("ignore", "Api key is used with an insecure connection")
                    self._remote = QdrantClient(
                        url=self._url,
                        api_key=self._api_key,
                        timeout=self.timeout,
                        prefer_grpc=False,
                        check_compatibility=False,
                    )
            except Exception as exc:
                raise ConnectorError(f"cannot set up a Qdrant client for {self.location}: {self._scrub(exc)}") from exc
        return self._remote

    def _local_client(self, path: Path) -> QdrantClient:
        try:
            return QdrantClient(path=str(path))
        except RuntimeError as exc:
            if "already accessed" not in str(exc):
                raise ConnectorError(f"cannot open the Qdrant local storage at {self.location}: {exc}") from exc
            raise ConnectorError(
                f"the Qdrant local storage at {self.location} is held by another process",
                "local mode allows one client at a time: scan with snapshot=True (the default), "
                "stop the application holding it for writes, or serve the data with a Qdrant server",
            ) from exc
        except Exception as exc:
            raise ConnectorError(
                f"cannot open the Qdrant local storage at {self.location}: {type(exc).__name__}: {exc}",
                "point path at the folder given to QdrantClient(path=...)",
            ) from exc

    def _local_meta(self) -> dict[str, Any]:
        assert self._path is not None
        meta_path = self._path / "meta.json"
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

    def _reader(self) -> tuple[QdrantClient, str]:
        """The client and collection name scans use: the server, a snapshot copy, or the store itself."""
        if self._path is None:
            return self._server(), self.collection_name
        if not self.snapshot:
            self._local_meta()  # a missing store is an error, not something to create
            return self._writer()
        if self._read_client is None:
            meta = self._local_meta()
            real = self._resolve_local(meta)
            tmp = Path(tempfile.mkdtemp(prefix="vdbguard-qdrant-"))
            self._cleanup = weakref.finalize(self, shutil.rmtree, tmp, ignore_errors=True)
            store = tmp / "store"
            target = store / "collection" / _SNAPSHOT_NAME
            target.mkdir(parents=True)
            source = self._path / "collection" / real / "storage.sqlite"
            if source.is_file():
                try:
                    _sqlite_backup(source, target / "storage.sqlite")
                except (sqlite3.Error, OSError) as exc:
                    raise ConnectorError(
                        f"cannot copy Qdrant collection {self.collection_name!r} from {self.location}: {exc}",
                        "check read permissions on the storage folder",
                    ) from exc
            text_indexes = meta.get("text_indexes", {}).get(real)
            small = {
                "collections": {_SNAPSHOT_NAME: meta["collections"][real]},
                "aliases": {},
                **({"text_indexes": {_SNAPSHOT_NAME: text_indexes}} if text_indexes else {}),
            }
            (store / "meta.json").write_text(json.dumps(small))
            self._snapshot_dir = store
            self._read_client = self._local_client(store)
        return self._read_client, _SNAPSHOT_NAME

    def _resolve_local(self, meta: dict[str, Any]) -> str:
        name = self.collection_name
        if name in meta["collections"]:
            return name
        alias = (meta.get("aliases") or {}).get(name)
        if alias in meta["collections"]:
            return str(alias)
        raise self._not_found(sorted(meta["collections"]))

    def _writer(self) -> tuple[QdrantClient, str]:
        if self._path is None:
            return self._server(), self.collection_name
        if self._write_client is None:
            self._write_client = self._local_client(self._path)
        return self._write_client, self.collection_name

    def _drop_snapshot(self) -> None:
        self._read_layout = None
        if self._read_client is not None:
            _close(self._read_client)
            self._read_client = None
        self._snapshot_dir = None
        if self._cleanup is not None:
            self._cleanup()
            self._cleanup = None

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

    def _reading(self) -> tuple[QdrantClient, str, VectorLayout]:
        client, name = self._reader()
        if self._read_layout is None:
            self._read_layout = self._layout(client, name)
        return client, name, self._read_layout

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            if self._path is not None:
                return fn(*args, **kwargs)
            return with_retries(lambda: fn(*args, **kwargs), is_transient=_transient, what=f"Qdrant {what}")
        except VdbguardError:
            raise
        except Exception as exc:
            raise self._failed(what, exc) from exc

    def _failed(self, what: str, exc: Exception) -> VdbguardError:
        where = f"Qdrant {what} on {self.collection_name!r} at {self.location}"
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
            return ConnectorError(f"{where} failed: HTTP {status}: {self._scrub(_detail(exc))}", _SERVER_HINT)
        source = exc.source if isinstance(exc, ResponseHandlingException) else exc
        if isinstance(source, httpx.TransportError):
            return ConnectorError(
                f"cannot reach Qdrant at {self.location}: {type(source).__name__}: {self._scrub(source)}", _SERVER_HINT
            )
        if self._path is not None and isinstance(exc, ValueError) and "not found" in str(exc):
            return self._not_found()
        return ConnectorError(f"{where} failed: {type(exc).__name__}: {self._scrub(exc)}")

    def _not_found(self, names: Sequence[str] | None = None) -> CollectionNotFoundError:
        if names is None:
            try:
                if self._path is not None:
                    names = sorted(self._local_meta()["collections"])
                else:
                    names = sorted(c.name for c in self._server().get_collections().collections)
            except Exception:
                names = []
        existing = ", ".join(names) if names else "none"
        return CollectionNotFoundError(
            f"Qdrant collection {self.collection_name!r} not found at {self.location}",
            f"existing collections: {existing}",
        )

    def _scrub(self, value: object) -> str:
        text = str(value)
        return text.replace(self._api_key, "***") if self._api_key else text

    # -- Connector API -------------------------------------------------------------------------

    def describe(self) -> CollectionInfo:
        client, name, layout = self._reading()
        count = int(self._call("count", client.count, name, exact=True).count)
        normalised = self._path is None and layout.distance == "Cosine"
        return CollectionInfo(
            name=self.collection_name,
            dimension=layout.dimension,
            count=count,
            metric=layout.metric,
            vector_names=layout.names,
            extra={
                "location": self.location,
                "mode": "local" if self._path is not None else "server",
                "vector_name": layout.primary,
                "distances": {k: d for k, (_, d) in layout.dense.items()},
                "sparse_vectors": list(layout.sparse),
                "vectors_normalised": normalised,
                "snapshot": self._path is not None and self.snapshot,
            },
        )

    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
        """Pages of at most ``batch_size`` points in id order; every batch carries a cursor."""
        if batch_size < 1:
            raise VdbguardError(f"batch_size must be at least 1, got {batch_size}")
        done, offset = decode_cursor(resume_from)
        if done:
            return
        client, name, layout = self._reading()
        while True:
            points, next_id = self._call(
                "scroll", client.scroll, name, limit=batch_size, offset=offset, with_payload=True, with_vectors=True
            )
            records = [layout.record(p.id, p.vector, p.payload, self.collection_name) for p in points]
            if records:
                yield Batch(records, encode_cursor(next_id))
            if next_id is None:
                return
            offset = next_id

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Write ``records``; each replaces the stored point with its id entirely (payload and vectors)."""
        if not records:
            return
        client, name = self._writer()
        if self._write_layout is None:
            self._write_layout = self._layout(client, name)
        layout = self._write_layout
        points = []
        for record in records:  # every record checked before anything is written
            payload = dict(record.payload)
            if record.text is not None:
                payload["text"] = record.text
            points.append(
                models.PointStruct(id=point_id_of(record.id), vector=layout.point_vector(record), payload=payload)
            )
        for start in range(0, len(points), _UPSERT_CHUNK):
            self._call("upsert", client.upsert, name, points=points[start : start + _UPSERT_CHUNK], wait=True)
        self._drop_snapshot()

    def ensure_collection(self, dimension: int, metric: str = "cosine", vector_names: Sequence[str] = ()) -> None:
        distance = _DISTANCES.get(metric.lower())
        if distance is None:
            raise VdbguardError(f"unknown metric {metric!r} for Qdrant", "use cosine, l2 or ip")
        params = models.VectorParams(size=int(dimension), distance=models.Distance(distance))
        config: Any = {n: params for n in vector_names} if vector_names else params
        client, name = self._writer()
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
        for client in (self._remote, self._write_client):
            if client is not None:
                _close(client)
        self._remote = self._write_client = None
        self._write_layout = None


def _transient(exc: BaseException) -> bool:
    """Connection drops, timeouts, 429 and 5xx answers are worth retrying."""
    if isinstance(exc, ResourceExhaustedResponse):
        return True
    if isinstance(exc, UnexpectedResponse):
        return http_status_is_transient(exc.status_code)
    if isinstance(exc, ResponseHandlingException):
        return isinstance(exc.source, httpx.TransportError)
    return isinstance(exc, httpx.TransportError)


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


def _close(client: QdrantClient) -> None:
    with contextlib.suppress(Exception):
        client.close()
