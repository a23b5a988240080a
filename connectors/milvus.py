"""Milvus adapter: an embedded Milvus Lite store (``path=...db``) or a Milvus server (``url``)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import grpc
import numpy as np
from pymilvus import DataType, MilvusClient, MilvusException
from vdbguard.connectors.base import CollectionInfo, Connector
from vdbguard.connectors.support import (
    EmbeddedStore,
    ServerStore,
    StoreCalls,
    Tls,
    close_quietly,
    is_integer,
    metric_name,
    require_path_or_url,
    server_url,
    store_metric,
)

from vdbguard.credentials import redact_userinfo, scrub
from vdbguard.errors import CollectionNotFoundError, ConnectorError, RecordError, VdbguardError
from vdbguard.records import Batch, VectorRecord

_DENSE = {DataType.FLOAT_VECTOR, DataType.FLOAT16_VECTOR, DataType.BFLOAT16_VECTOR, DataType.INT8_VECTOR}
_OTHER_VECTORS = {DataType.BINARY_VECTOR, DataType.SPARSE_FLOAT_VECTOR}
_METRICS = {"cosine": "COSINE", "l2": "L2", "ip": "IP"}  # vdbguard metric -> Milvus metric type
_TEXT_PROPERTY = "vdbguard.text"  # collection property naming the document field (set by ensure_collection)
_WRITE_CHUNK = 1000
_MAX_PAGE = 4096  # well below Milvus' 16384-row query window
_TRANSIENT_GRPC = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED}
_CURSOR_HINT = "pass a cursor taken from a milvus scan, or none to start over"


class MilvusConnector(StoreCalls, Connector):
    """One Milvus collection, embedded (``path``, a Milvus Lite ``.db``) or on a server (``url``).

    What is read: the primary key (VARCHAR or INT64; ``.id`` is its string form), every dense vector
    field (FLOAT, FLOAT16, BFLOAT16, INT8; binary and sparse vectors are skipped): with several, they
    are the named vectors and ``vector_name`` picks ``.vector`` (default: the first in the schema).
    The document is ``text_field`` (default ``text``: a VARCHAR field or a dynamic key); every other
    scalar field and every dynamic field is payload (null values count as absent keys). Partitions
    are the namespaces: all are read (``namespace``, one name or a comma-separated list, restricts
    the scan), and ``record.namespace`` is the partition name (``_default`` for the default one).
    The metric is that of the index on the scanned vector field (None without an index).

    Paging: partitions are read one after the other in name order, each as a keyset scan in
    primary-key order: ``query(filter="pk > last", limit=page)`` with the ``iterator`` query
    parameter that pymilvus' ``query_iterator`` uses to get pk-sorted pages (on Milvus Lite and
    servers alike; the pages are requested here because ``query_iterator`` does not escape quotes or
    backslashes in string keys and then fails). Cursors are JSON ``{"partition": P, "last": PK}``;
    resuming filters ``pk > PK`` in ``P`` and goes on with the partitions after it, so nothing is
    repeated; rows written meanwhile behind the cursor are not seen, rows ahead of it are, and a
    partition created meanwhile is read only if its name sorts after ``P``. Pages are capped at
    4096 rows (Milvus' query window is 16384; milvus-lite 2.5.x hangs on batches of 5000 or more).

    Read-only guarantee (embedded): opening a Milvus Lite store takes an exclusive lock and writes
    (``LOCK``, directories; a store not closed cleanly replays and flushes its WAL), and a store held
    by another process cannot be opened at all. So with ``snapshot=True`` (default) reads open a
    private copy of the ``.db`` made under the temp dir on first read and deleted by ``close()``
    (cost: disk and time proportional to the store; a copy taken while another process writes sees
    what that process has flushed to its WAL) and load it (``load_collection`` on the copy).
    ``snapshot=False`` reads in place. Servers are only read: a collection that is not loaded is an
    error unless ``load=True``.

    ``upsert`` fully replaces rows: Milvus Lite 3.x's upsert merges fields into the stored row and
    upserting into another partition would leave a duplicate, so each chunk of ids is first deleted
    from the whole collection, then upserted into its partition (``record.namespace``, created if
    missing; else the one ``namespace`` given, else ``_default``). That is not atomic: a failure in
    between loses those rows. Payload keys become scalar fields where the schema has them, else
    dynamic fields. ``ensure_collection`` makes a VARCHAR ``id``, FLOAT_VECTOR field(s) (``vector``
    or the given names) with an AUTOINDEX of the metric, a nullable VARCHAR document field and
    dynamic fields; when a vector is named like ``text_field`` the document field is ``document``,
    recorded in the collection property ``vdbguard.text``. Closing an embedded connector stops the
    Milvus Lite server it started for the store (which flushes it), never one started by other code.

    Measured with milvus-lite 3.2.2 (pure Python, in-process gRPC server, the ``.db`` is a
    directory) and pymilvus 3.0. Tokens (``token`` or ``MILVUS_TOKEN``) never appear in messages.
    """

    name: ClassVar[str] = "milvus"

    def __init__(
        self,
        *,
        collection: str,
        path: str | Path | None = None,
        url: str | None = None,
        token: str | None = None,
        db_name: str = "",
        namespace: str | Sequence[str] | None = None,
        vector_name: str | None = None,
        text_field: str = "text",
        snapshot: bool | str = True,
        load: bool | str = False,
        timeout: float | str = 10.0,
        tls_verify: bool | str = True,
    ) -> None:
        require_path_or_url(
            "milvus", path, url, "pass path=FILE.db for Milvus Lite or url=http://HOST:19530 for a server"
        )
        self.collection_name = collection
        self.vector_name = vector_name
        self.text_field = text_field
        self.snapshot = _flag(snapshot)
        self.load = _flag(load)
        self.timeout = float(timeout)
        self.db_name = db_name
        if isinstance(namespace, str):
            namespace = [n.strip() for n in namespace.split(",") if n.strip()]
        self.namespaces = tuple(namespace) if namespace else None
        self._token = token if token is not None else os.environ.get("MILVUS_TOKEN", "")
        self._store: _Server | _Lite
        if path is not None:
            self._store = _Lite(Path(path).expanduser().absolute(), self.snapshot, self._token)
        else:
            assert url is not None
            self._store = _Server(url, self._token, db_name, self.timeout, self._failed)
            tls = Tls(tls_verify, self._store.location)
            if not tls.verify:
                raise VdbguardError(
                    "the milvus connector cannot turn TLS verification off (pymilvus' gRPC channel always checks)",
                    "pass --ca-cert with the CA that signed the server's certificate instead of --insecure",
                )
            self._store.ca_file = tls.ca_file
        self.location = self._store.location
        self._schemas: dict[int, _Schema] = {}

    # -- store calls ---------------------------------------------------------------------------

    def _drop_snapshot(self) -> None:
        if self._store.drop_snapshot():
            self._schemas.clear()

    store: ClassVar[str] = "Milvus"

    def _retries(self) -> bool:
        return self._store.remote

    def _transient(self, exc: BaseException) -> bool:
        """gRPC UNAVAILABLE / DEADLINE_EXCEEDED / RESOURCE_EXHAUSTED and Milvus rate limiting."""
        code = _code(exc)
        if code in _TRANSIENT_GRPC:
            return True
        if isinstance(exc, MilvusException):
            text = str(exc.message).lower()
            return code == 8 or "unavailable" in text or "rate limit" in text or "deadline" in text
        return False

    def _detail(self, exc: BaseException) -> str:
        return _message(exc, self._token)

    def _failed(self, what: str, exc: BaseException) -> ConnectorError:
        if _is_auth_error(exc):
            return ConnectorError(
                f"Milvus at {self.location} rejected the credentials ({what})",
                "check the token / API key (token=... or MILVUS_TOKEN, user:password or a Zilliz API key)",
            )
        hint = None
        if self._store.remote and self._transient(exc):
            hint = "is the server running and reachable? check the host and port"
        return self._failure(what, exc, hint)

    def _schema(self, client: Any) -> _Schema:
        cached = self._schemas.get(id(client))
        if cached is not None:
            return cached
        if not self._call("has_collection", client.has_collection, self.collection_name):
            names = sorted(self._call("list_collections", client.list_collections))
            raise CollectionNotFoundError(
                f"Milvus collection {self.collection_name!r} not found at {self.location}",
                f"existing collections: {', '.join(names) or 'none'}",
            )
        desc = self._call("describe_collection", client.describe_collection, self.collection_name)
        schema = _Schema(desc, self.text_field, self.vector_name, self.collection_name)
        self._schemas[id(client)] = schema
        return schema

    def _loaded(self, client: Any) -> None:
        state = self._call("get_load_state", client.get_load_state, self.collection_name).get("state")
        if "NotLoad" not in str(state):
            return
        if not self._store.remote or self.load:
            self._call("load_collection", client.load_collection, self.collection_name)
            return
        raise ConnectorError(
            f"Milvus collection {self.collection_name!r} at {self.location} is not loaded",
            "load it (client.load_collection) or pass load=true to let vdbguard load it",
        )

    def _partitions(self, client: Any) -> list[str]:
        names = sorted(self._call("list_partitions", client.list_partitions, self.collection_name))
        if self.namespaces is None:
            return names
        missing = [n for n in self.namespaces if n not in names]
        if missing:
            raise ConnectorError(
                f"Milvus collection {self.collection_name!r} has no partition {', '.join(missing)}",
                f"existing partitions: {', '.join(names)}",
            )
        return sorted(self.namespaces)

    # -- Connector API -------------------------------------------------------------------------

    def _collection_names(self) -> list[str]:
        """The collections of ``db_name``; a Milvus Lite store is listed in its private copy (see the class doc)."""
        client = self._store.reader()
        return list(self._call("list_collections", client.list_collections))

    def describe(self) -> CollectionInfo:
        client = self._store.reader()
        schema = self._schema(client)
        self._loaded(client)
        partitions = self._partitions(client)
        rows = self._call(
            "count",
            client.query,
            self.collection_name,
            filter="",
            output_fields=["count(*)"],
            partition_names=partitions,
        )
        metric = None
        with contextlib.suppress(ConnectorError):
            for index in self._call("list_indexes", client.list_indexes, self.collection_name, schema.primary):
                info = self._call("describe_index", client.describe_index, self.collection_name, index) or {}
                if info.get("metric_type"):
                    metric = metric_name(str(info["metric_type"])) or str(info["metric_type"]).lower()
                    break
        return CollectionInfo(
            name=self.collection_name,
            dimension=schema.dims[schema.primary],
            count=int(rows[0]["count(*)"]) if rows else 0,
            metric=metric,
            vector_names=tuple(schema.vectors) if len(schema.vectors) > 1 else (),
            namespaces=tuple(partitions),
            extra={"location": self.location, "primary_key": schema.pk},
        )

    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
        """Partitions in name order, each in primary-key order, pages of at most ``batch_size``."""
        if batch_size < 1:
            raise VdbguardError(f"batch_size must be at least 1, got {batch_size}")
        start_partition, last = _parse_cursor(resume_from)
        client = self._store.reader()
        schema = self._schema(client)
        self._loaded(client)
        page = min(batch_size, _MAX_PAGE)
        for partition in self._partitions(client):
            if start_partition is not None and partition < start_partition:
                continue
            if partition != start_partition:
                last = None
            while True:
                # Keyset paging in primary-key order: the "iterator" query parameter is what pymilvus'
                # query_iterator sends to get pk-sorted pages (its own next-page filter does not escape
                # quotes in string keys, so pages are requested here). A short page does not mean the
                # end on a server (segments are reduced lazily): stop at the first empty page.
                rows = self._call(
                    "query",
                    client.query,
                    self.collection_name,
                    filter="" if last is None else schema.after(last),
                    output_fields=["*"],
                    partition_names=[partition],
                    limit=page,
                    iterator="True",
                )
                if not rows:
                    break
                last = rows[-1][schema.pk]
                records = [schema.record(row, partition) for row in rows]
                yield Batch(records, json.dumps({"partition": partition, "last": last}))

    def query_vector(self, vector: Sequence[float]) -> list[float] | None:
        client = self._store.reader()
        schema = self._schema(client)
        self._loaded(client)
        found = self._call(
            "search",
            client.search,
            self.collection_name,
            data=[list(vector)],
            anns_field=schema.primary,
            limit=1,
            output_fields=[schema.primary],
            partition_names=self._partitions(client),
        )
        hits = found[0] if found else []
        if not hits:
            return None
        hit = _dense(hits[0].get("entity", {}).get(schema.primary), schema.types[schema.primary])
        return None if hit is None else [float(x) for x in hit]

    def delete(self, ids: Sequence[str]) -> None:
        """Delete the ids from every partition; ids that cannot be keys of the collection are not stored."""
        client = self._store.writer()
        schema = self._schema(client)
        keys = [i for i in ids if schema.pk_is_str or is_integer(i)]
        for start in range(0, len(keys), _WRITE_CHUNK):
            among = schema.among(keys[start : start + _WRITE_CHUNK])
            self._call("delete", client.delete, self.collection_name, filter=among)
        if keys:
            self._drop_snapshot()

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Delete the ids everywhere, then upsert each record into its partition (see the class doc)."""
        if not records:
            return
        client = self._store.writer()
        schema = self._schema(client)
        records = list({r.id: r for r in records}.values())  # last one wins
        rows = [schema.row(r) for r in records]  # RecordError before anything is written
        default = self.namespaces[0] if self.namespaces and len(self.namespaces) == 1 else "_default"
        partitions = [r.namespace or default for r in records]
        existing = set(self._call("list_partitions", client.list_partitions, self.collection_name))
        for partition in sorted(set(partitions) - existing):
            self._call("create_partition", client.create_partition, self.collection_name, partition)
        for start in range(0, len(rows), _WRITE_CHUNK):
            chunk = rows[start : start + _WRITE_CHUNK]
            among = schema.among([row[schema.pk] for row in chunk])
            self._call("delete", client.delete, self.collection_name, filter=among)
            by_partition: dict[str, list[dict[str, Any]]] = {}
            for row, partition in zip(chunk, partitions[start : start + _WRITE_CHUNK], strict=True):
                by_partition.setdefault(partition, []).append(row)
            for partition, part in by_partition.items():
                self._call("upsert", client.upsert, self.collection_name, part, partition_name=partition)
        self._drop_snapshot()

    def ensure_collection(self, dimension: int, metric: str = "cosine", vector_names: Sequence[str] = ()) -> None:
        client = self._store.writer()
        if self._call("has_collection", client.has_collection, self.collection_name):
            return
        milvus_metric = store_metric(metric, _METRICS)
        if milvus_metric is None:
            raise VdbguardError(f"unsupported metric {metric!r} for Milvus", "use cosine, l2 or ip")
        names = list(vector_names) or ["vector"]
        text = self.text_field if self.text_field not in names else "document"
        if len({"id", text, *names}) != len(names) + 2:
            raise VdbguardError(f"vector names {names} clash with the id or document field")
        fields = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=True)
        fields.add_field("id", DataType.VARCHAR, is_primary=True, max_length=512)
        for name in names:
            fields.add_field(name, DataType.FLOAT_VECTOR, dim=dimension)
        fields.add_field(text, DataType.VARCHAR, max_length=65535, nullable=True)
        index_params = client.prepare_index_params()
        for name in names:
            index_params.add_index(name, index_type="AUTOINDEX", metric_type=milvus_metric)
        self._call(
            "create_collection",
            client.create_collection,
            self.collection_name,
            schema=fields,
            index_params=index_params,
            **({"properties": {_TEXT_PROPERTY: text}} if text != self.text_field else {}),
        )
        self._schemas.clear()

    def close(self) -> None:
        self._drop_snapshot()
        self._store.close()
        self._schemas.clear()


class _Server(ServerStore):
    """A Milvus server."""

    def __init__(
        self, url: str, token: str, db_name: str, timeout: float, failed: Callable[[str, BaseException], Exception]
    ) -> None:
        parts = server_url(url, "Milvus", 19530, with_path=True, schemes=("http", "https", "tcp", "grpc"))
        self.location = parts.netloc
        self._url = parts.location + parts.path
        self._token = token
        self._db_name = db_name
        self._timeout = timeout
        self._failed = failed
        self.ca_file: str | None = None  # a private CA's PEM file; None: the system's roots

    def _connect(self) -> Any:
        # pymilvus shares connections by address and token alone, whatever CA they trusted: one that trusts a
        # private CA gets its own
        tls = {"secure": True, "server_pem_path": self.ca_file, "dedicated": True} if self.ca_file else {}
        try:
            return MilvusClient(uri=self._url, token=self._token, db_name=self._db_name, timeout=self._timeout, **tls)
        except Exception as exc:
            raise self._failed("connect", exc) from exc


class _Lite(EmbeddedStore):
    """A Milvus Lite ``.db``: opening it takes an exclusive lock and writes (see the class doc)."""

    copy_prefix = "milvus"
    described_as = "the Milvus Lite store"
    open_hint = "is another process holding it open? (it takes an exclusive lock); snapshot=true reads a copy"

    def __init__(self, path: Path, snapshot: bool, token: str) -> None:
        if not path.name.endswith(".db"):
            raise VdbguardError(f"Milvus Lite path {path} must end with .db", "e.g. path=./milvus.db")
        super().__init__(path, snapshot)
        self.copy_name = path.name
        self._token = token
        self._owned: list[str] = []  # Milvus Lite data dirs whose server this connector started

    def _check(self) -> None:
        if not self.path.exists():
            raise ConnectorError(
                f"Milvus Lite store {self.location} does not exist", "point path at the .db given to MilvusClient"
            )

    def _connect(self, path: Path) -> Any:
        uri = str(path)
        if os.path.abspath(uri) not in getattr(_server_manager(), "_servers", {}):
            self._owned.append(uri)
        return MilvusClient(uri=uri)

    def _open_failed(self, exc: Exception) -> ConnectorError:
        return ConnectorError(
            f"cannot open {self.described_as} at {self.location}: {_message(exc, self._token)}", self.open_hint
        )

    def writer(self) -> Any:
        if self._writer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        return super().writer()

    def _release(self, client: Any, path: Path) -> None:
        """Closing stops the Milvus Lite server this connector started for the store (which flushes it)."""
        close_quietly(client)
        if str(path) in self._owned:
            self._owned.remove(str(path))
            with contextlib.suppress(Exception):
                _server_manager().release_server(str(path))


class _Schema:
    """A collection's fields: which is the key, which hold vectors, the document and the payload."""

    def __init__(self, desc: dict[str, Any], text_field: str, vector_name: str | None, collection: str) -> None:
        fields = desc.get("fields", [])
        self.collection = collection
        self.dynamic = bool(desc.get("enable_dynamic_field"))
        pk = next((f for f in fields if f.get("is_primary")), None)
        if pk is None:
            raise ConnectorError(f"Milvus collection {collection!r} has no primary key field")
        self.pk: str = pk["name"]
        self.pk_is_str = pk["type"] == DataType.VARCHAR
        self.vectors = [f["name"] for f in fields if f["type"] in _DENSE]
        self.types = {f["name"]: f["type"] for f in fields}
        self.types_nullable = {f["name"]: bool(f.get("nullable")) for f in fields}
        self.dims = {f["name"]: int(f.get("params", {}).get("dim", 0)) or None for f in fields if f["type"] in _DENSE}
        self.skipped = {f["name"] for f in fields if f["type"] in _OTHER_VECTORS}
        if not self.vectors:
            raise ConnectorError(f"Milvus collection {collection!r} has no dense vector field")
        self.primary = vector_name or self.vectors[0]
        if self.primary not in self.vectors:
            raise VdbguardError(
                f"Milvus collection {collection!r} has no vector field {self.primary!r}",
                f"choose vector_name among: {', '.join(self.vectors)}",
            )
        properties = desc.get("properties") or {}
        self.text = str(properties.get(_TEXT_PROPERTY) or text_field)  # a VARCHAR field or a dynamic key
        if self.text in self.vectors or self.text == self.pk or (self.text not in self.types and not self.dynamic):
            self.text = ""
        self.scalars = {
            f["name"]: f
            for f in fields
            if f["name"] not in (self.pk, self.text) and f["type"] not in _DENSE | _OTHER_VECTORS
        }

    def literal(self, key: Any) -> str:
        """A primary key as a filter-expression literal (pymilvus' own ``ids=`` does not escape quotes)."""
        if not self.pk_is_str:
            return str(int(key))
        escaped = str(key).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
        return f'"{escaped}"'

    def after(self, last: Any) -> str:
        """The filter expression for rows whose key sorts after ``last``."""
        return f"{self.pk} > {self.literal(last)}"

    def among(self, keys: Sequence[Any]) -> str:
        return f"{self.pk} in [{', '.join(self.literal(k) for k in keys)}]"

    def record(self, row: dict[str, Any], partition: str) -> VectorRecord:
        row = dict(row)
        record_id = str(row.pop(self.pk))
        vectors = {name: _dense(row.pop(name, None), self.types[name]) for name in self.vectors}
        for name in self.skipped:
            row.pop(name, None)
        text = row.pop(self.text, None) if self.text else None
        return VectorRecord(
            id=record_id,
            vector=vectors[self.primary],
            payload={k: v for k, v in row.items() if v is not None},
            text=text if isinstance(text, str) else None,
            collection=self.collection,
            namespace=partition,
            named_vectors={n: v for n, v in vectors.items() if v is not None} if len(self.vectors) > 1 else {},
        )

    def row(self, r: VectorRecord) -> dict[str, Any]:
        """The entity for ``r``, validated (RecordError) before anything is written."""
        row: dict[str, Any] = {self.pk: r.id if self.pk_is_str else _int_id(r)}
        for name in self.vectors:
            vector = r.named_vectors.get(name) if r.named_vectors else None
            if vector is None and name != self.primary:
                raise RecordError(r.id, f"named_vectors[{name!r}]", "is missing")
            checked = (r if vector is None else VectorRecord(r.id, vector)).checked_vector(self.dims[name])
            row[name] = _encode(checked, self.types[name])
        payload = dict(r.payload)
        if self.text in self.types:
            nullable = self.types_nullable.get(self.text, False)
            row[self.text] = r.text if r.text is not None or nullable else ""
        elif self.text and r.text is not None:
            row[self.text] = r.text  # a dynamic field
        # else: no document field and no dynamic fields: the text is not stored
        for key, value in payload.items():
            if key in row or key in self.skipped or (key not in self.scalars and not self.dynamic):
                raise RecordError(r.id, "payload", f"key {key!r} is not a payload field of the collection")
            row[key] = value
        for name, field in self.scalars.items():
            if name not in row and not field.get("nullable") and "default_value" not in field:
                raise RecordError(r.id, "payload", f"has no value for the required field {name!r}")
        return row


def _server_manager() -> Any:
    from milvus_lite.server_manager import server_manager_instance  # only needed for embedded stores

    return server_manager_instance


def _flag(value: bool | str) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() in ("1", "true", "yes", "on")


def _int_id(r: VectorRecord) -> int:
    try:
        return int(r.id)
    except ValueError as exc:
        raise RecordError(r.id, "id", "is not an integer, but the collection has an INT64 primary key") from exc


def _dense(value: Any, dtype: DataType) -> np.ndarray | None:
    """A stored dense vector as float32 (FLOAT16/BFLOAT16 come back as bytes, INT8 as bytes or ints)."""
    if value is None:
        return None
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], (bytes, bytearray)):
        value = value[0]
    if isinstance(value, (bytes, bytearray)):
        if dtype == DataType.BFLOAT16_VECTOR:
            return (np.frombuffer(value, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        raw = {DataType.FLOAT16_VECTOR: np.float16, DataType.INT8_VECTOR: np.int8}.get(dtype, np.float32)
        return np.frombuffer(value, dtype=raw).astype(np.float32)
    return np.asarray(value, dtype=np.float32)


def _encode(vector: np.ndarray, dtype: DataType) -> Any:
    if dtype == DataType.FLOAT16_VECTOR:
        return vector.astype(np.float16)
    if dtype == DataType.INT8_VECTOR:
        return vector.astype(np.int8)
    return vector.tolist()  # FLOAT_VECTOR: exact (float32 -> float -> float32); BFLOAT16 from floats


def _message(exc: BaseException, secret: str) -> str:
    return redact_userinfo(scrub(f"{type(exc).__name__}: {getattr(exc, 'message', None) or exc}", [secret]))


def _code(exc: BaseException) -> Any:
    if isinstance(exc, grpc.RpcError):
        return exc.code()
    return getattr(exc, "code", None)


def _is_auth_error(exc: BaseException) -> bool:
    code = _code(exc)
    text = str(getattr(exc, "message", "") or exc).lower()
    if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED, 1800):
        return True
    return "authenticat" in text or "password" in text or "invalid token" in text


def _parse_cursor(cursor: str | None) -> tuple[str | None, Any]:
    if cursor is None:
        return None, None
    try:
        data = json.loads(cursor)
        partition, last = data["partition"], data["last"]
    except (ValueError, TypeError, KeyError) as exc:
        raise VdbguardError(f"bad Milvus resume cursor {cursor!r}", _CURSOR_HINT) from exc
    if not isinstance(partition, str) or not isinstance(last, (str, int)):
        raise VdbguardError(f"bad Milvus resume cursor {cursor!r}", _CURSOR_HINT)
    return partition, last
