"""LanceDB adapter: one table of an embedded LanceDB database (a directory of Lance datasets)."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import sys
import threading
import types
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
from vdbguard.connectors.base import CollectionInfo, Connector
from vdbguard.connectors.support import is_integer, metric_name

from vdbguard.errors import CollectionNotFoundError, ConnectorError, RecordError, VdbguardError
from vdbguard.records import Batch, Columns, VectorRecord


def _defer_package_init(name: str) -> None:
    """Import package ``name``'s submodules without running its ``__init__`` until a name is asked of the
    package itself. LanceDB imports its REST namespace client's models, and that client's ``__init__`` builds
    every REST API class (about 0.4 s of each scan's start); vdbguard reads local and object-store tables and
    never calls it, while code that does still gets the whole package on first use."""
    spec = importlib.util.find_spec(name) if name not in sys.modules else None
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    loader, running = spec.loader, threading.Lock()

    class DeferredInit(types.ModuleType):
        def __getattr__(self, attribute: str) -> Any:
            with running:
                if type(self) is DeferredInit:
                    self.__class__ = types.ModuleType
                    loader.exec_module(self)
            return getattr(self, attribute)

    package = importlib.util.module_from_spec(spec)
    package.__class__ = DeferredInit
    sys.modules[name] = package


def _lancedb() -> Any:
    """LanceDB, imported on first use: the re-scan of an unchanged local table never opens it, and its import is
    most of that re-scan's time."""
    _defer_package_init("lance_namespace_urllib3_client")
    import lancedb

    return lancedb


if importlib.util.find_spec("lancedb") is None:  # the extra is missing: say so when the connector is loaded
    raise ImportError("No module named 'lancedb'", name="lancedb")

_META_KEY = b"vdbguard"  # schema metadata written by ensure_collection: {"metric", "text", "payload"}
_CURSOR_HINT = "pass a cursor taken from a lancedb scan, or none to start over"


def normalise_metric(metric: str) -> str:
    """LanceDB distance names (``l2``, ``cosine``, ``dot``) as vdbguard metrics (``l2``, ``cosine``, ``ip``)."""
    return metric_name(metric) or metric.lower()


READ_BYTES = 12 << 20  # of vectors per query
AHEAD = 2  # queries under way


class LanceDBConnector(Connector):
    """One table of an embedded LanceDB database (``path``: the directory given to ``lancedb.connect``,
    or an object-store URI LanceDB understands; the object store client retries transient errors).

    Layout read: ``id_column`` (default ``id``) is the record id; every fixed-size-list column of
    floats is a vector column (one: it becomes ``.vector`` and ``describe().vector_names`` is empty;
    several: they are the named vectors and ``vector_name`` picks ``.vector``, default the first);
    ``text_column`` (default ``text``, if it is a string column) is the document; every other column
    goes into the payload (a null counts as an absent key). Tables made by ``ensure_collection`` are
    ``id`` string, the vector column(s) ``fixed_size_list<float32>[d]`` (``vector`` or the given
    names), ``text`` string and ``payload``: the payload as one JSON string (Arrow needs a fixed
    schema, payload keys vary), decoded back into a dict; JSON round-trips ints, strings, bools and
    floats exactly. Their schema metadata (``vdbguard``) records the metric and the document column;
    when a vector is named like ``text_column`` the document goes to column ``document`` instead.

    Metric: the distance type of a vector index on the scanned column if there is one, else the
    metric recorded by ``ensure_collection``, else the ``metric`` option (LanceDB's default, ``l2``).

    Paging: a scan pins the table version current when it starts and streams it with LanceDB's own
    query (``search().offset(n).to_batches()``, the Lance scanner underneath; ``to_lance()`` would
    need the separate ``pylance`` package, which the ``lancedb`` extra does not install). A given
    version's rows come back in a stable order. Cursors are JSON ``{"version": V, "offset": N}``;
    resuming opens version ``V`` again (``open_table(name, version=V)``), so writes made meanwhile
    (new versions) neither shift nor change the pages: the scan reads one consistent snapshot.
    Resuming fails clearly if that version was cleaned up (``cleanup_old_versions``/``optimize``).
    Reading only opens files (Lance files are immutable; measured with lancedb 0.40: the names and
    checksums of every file in the directory are unchanged by a scan), and a missing ``path`` is
    reported, not created. Only ``upsert`` and ``ensure_collection`` write.

    ``upsert`` rewrites whole rows with ``merge_insert(id_column)``, one new table version per call;
    records without ``text`` get a null document. Payload keys that are columns go there, others
    into the JSON ``payload`` column (with ``text`` too when the table has no document column);
    without a JSON column, unknown keys are a RecordError (nothing written) and text is not stored.
    """

    name: ClassVar[str] = "lancedb"

    def __init__(
        self,
        *,
        collection: str,
        path: str | Path,
        vector_name: str | None = None,
        id_column: str = "id",
        text_column: str = "text",
        metric: str = "l2",
    ) -> None:
        self.collection_name = collection
        self.location = str(Path(path).expanduser()) if "://" not in str(path) else str(path)
        self.vector_name = vector_name
        self.id_column = id_column
        self.text_column = text_column
        self.metric = normalise_metric(metric)
        self._db: Any = None

    # -- connection handling -------------------------------------------------------------------

    def _connect(self, create: bool = False) -> Any:
        if self._db is not None:
            return self._db
        local = "://" not in self.location
        if local and not create and not Path(self.location).is_dir():  # lancedb.connect would create it
            raise ConnectorError(
                f"LanceDB path {self.location} does not exist or is not a directory",
                "point path at the directory given to lancedb.connect() (the one holding <table>.lance)",
            )
        try:
            self._db = _lancedb().connect(self.location)
        except Exception as exc:
            raise ConnectorError(f"cannot open the LanceDB database at {self.location}: {_describe(exc)}") from exc
        return self._db

    def _table_names(self) -> list[str]:
        db = self._connect()
        try:
            listed = db.list_tables() if hasattr(db, "list_tables") else db.table_names()
            return sorted(getattr(listed, "tables", listed))
        except Exception:
            return []

    def _open(self, version: int | None = None) -> Any:
        db = self._connect()
        try:
            if version is None:
                return db.open_table(self.collection_name)
            try:
                return db.open_table(self.collection_name, version=version)
            except TypeError:  # lancedb without open_table(version=...)
                table = db.open_table(self.collection_name)
                table.checkout(version)
                return table
        except ValueError as exc:
            if "was not found" in str(exc) or "does not exist" in str(exc):
                existing = ", ".join(self._table_names()) or "none"
                raise CollectionNotFoundError(
                    f"LanceDB table {self.collection_name!r} not found at {self.location}",
                    f"existing tables: {existing}",
                ) from exc
            if version and "no longer exists" in str(exc):
                raise ConnectorError(
                    f"version {version} of LanceDB table {self.collection_name!r} no longer exists",
                    "it was cleaned up since the cursor was taken; start the scan over",
                ) from exc
            raise ConnectorError(f"cannot open LanceDB table {self.collection_name!r}: {_describe(exc)}") from exc
        except Exception as exc:
            raise ConnectorError(f"cannot open LanceDB table {self.collection_name!r}: {_describe(exc)}") from exc

    def _layout(self, table: Any) -> _Layout:
        schema: pa.Schema = table.schema
        meta = _schema_meta(schema)
        if self.id_column not in schema.names:
            raise ConnectorError(
                f"LanceDB table {self.collection_name!r} has no id column {self.id_column!r}",
                f"pass id_column=one of {', '.join(schema.names)}",
            )
        vectors = [f.name for f in schema if _is_vector(f.type) and f.name != self.id_column]
        if not vectors:
            raise ConnectorError(f"LanceDB table {self.collection_name!r} has no vector column")
        primary = self.vector_name or vectors[0]
        if primary not in vectors:
            raise VdbguardError(
                f"LanceDB table {self.collection_name!r} has no vector column {primary!r}",
                f"choose vector_name among: {', '.join(vectors)}",
            )
        text = meta.get("text", self.text_column)
        if text not in schema.names or text in vectors or not pa.types.is_string(schema.field(text).type):
            text = None
        json_payload = meta.get("payload")
        if json_payload not in schema.names:
            json_payload = None
        others = [n for n in schema.names if n not in (self.id_column, text, json_payload, *vectors)]
        return _Layout(schema, vectors, primary, text, json_payload, others, meta.get("metric"))

    # -- Connector API -------------------------------------------------------------------------

    def _collection_names(self) -> list[str]:
        """The database's tables (its root namespace), a page of ``list_tables`` at a time."""
        db = self._connect()
        if not hasattr(db, "list_tables"):  # lancedb before list_tables: one call names every table
            return list(self._listing(db.table_names))
        names: list[str] = []
        token: str | None = None
        while True:
            page = self._listing(functools.partial(db.list_tables, page_token=token))
            names += page.tables
            token = page.page_token
            if not token or not page.tables:
                return names

    def _listing(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except Exception as exc:
            raise ConnectorError(
                f"cannot list the tables of the LanceDB database at {self.location}: {_describe(exc)}"
            ) from exc

    def describe(self) -> CollectionInfo:
        table = self._open()
        layout = self._layout(table)
        return CollectionInfo(
            name=self.collection_name,
            dimension=layout.schema.field(layout.primary).type.list_size,
            count=int(table.count_rows()),
            metric=_index_metric(table, layout.primary) or layout.metric or self.metric,
            vector_names=tuple(layout.vectors) if len(layout.vectors) > 1 else (),
            extra={"location": self.location, "version": int(table.version), "vector_column": layout.primary},
        )

    def content_version(self) -> str | None:
        """The table and columns this connector reads, and what the table holds now: for a local table a digest
        of its manifests (no LanceDB import), else the current version with its commit time and totals (a table
        dropped and made again starts over at version 1). Every write commits a new version."""
        reads = {"id": self.id_column, "vector": self.vector_name, "text": self.text_column}
        local = _local_manifests(self.location, self.collection_name)
        if local is not None:
            return json.dumps({"table": self.collection_name, "manifests": local, "reads": reads}, sort_keys=True)
        table = self._open()
        version = int(table.version)
        try:
            entry = next((v for v in table.list_versions() if int(v["version"]) == version), None)
        except Exception:  # a LanceDB that lists no versions promises nothing
            return None
        if entry is None:
            return None
        return json.dumps(
            {
                "table": self.collection_name,
                "version": version,
                "at": str(entry["timestamp"]),
                "totals": entry.get("metadata"),
                "reads": reads,
            },
            sort_keys=True,
            default=str,
        )

    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
        """Pages of ``batch_size`` rows of one pinned table version, in Lance's scan order."""
        if batch_size < 1:
            raise VdbguardError(f"batch_size must be at least 1, got {batch_size}")
        version, offset = _parse_cursor(resume_from)
        table = self._open(version)
        version = int(table.version)
        layout = self._layout(table)
        # One query per READ_BYTES of vectors, AHEAD of them under way while this one's pages are handed out. A
        # single query over the whole table holds more and more of it (peak 327 MiB at 100k x 384-d, 543 MiB at
        # 1M); each query has a fixed cost, hidden by the ones under way, and Lance skips to an offset in
        # constant time. BENCHMARKS.md: "LanceDB queries under way".
        types = [layout.schema.field(name).type for name in layout.vectors]
        row_bytes = sum(t.list_size * t.value_type.bit_width for t in types) // 8
        rows, names = max(batch_size, READ_BYTES // max(row_bytes, 1)), layout.schema.names

        def read(start: int) -> pa.Table:
            return table.search().select(names).offset(start).limit(rows).to_batches(rows).read_all()

        with ThreadPoolExecutor(AHEAD, thread_name_prefix="vdbguard-lancedb") as pool:
            pending = deque(pool.submit(read, offset + i * rows) for i in range(AHEAD))
            while True:
                chunk = pending.popleft().result()
                if chunk.num_rows == rows:
                    pending.append(pool.submit(read, offset + AHEAD * rows))
                for start in range(0, chunk.num_rows, batch_size):
                    page = chunk.slice(start, batch_size)
                    offset += page.num_rows
                    yield self._batch(page, layout, _cursor(version, offset))
                if chunk.num_rows < rows:
                    return

    def _batch(self, page: pa.Table, layout: _Layout, cursor: str) -> Batch:
        """One vector column: the page as columns, records built only for the rows a scan attacks. Several: as
        records, each with its named vectors."""
        ids = page.column(self.id_column).cast(pa.string()).to_pylist()
        texts = page.column(layout.text).to_pylist() if layout.text else [None] * len(ids)
        raw = page.column(layout.json_payload).to_pylist() if layout.json_payload else [None] * len(ids)
        others = [page.column(column).to_pylist() for column in layout.others]
        vectors = {name: _matrix(_one_array(page.column(name))) for name in layout.vectors}

        def record(i: int) -> VectorRecord:
            payload: dict[str, Any] = {}
            if raw[i]:
                decoded = json.loads(raw[i])
                payload.update(decoded if isinstance(decoded, dict) else {layout.json_payload: decoded})
            for column, values in zip(layout.others, others, strict=True):  # a null counts as an absent key
                if values[i] is not None:
                    payload[column] = values[i]
            named = {n: m[i] for n, (m, present) in vectors.items() if present[i]} if len(vectors) > 1 else {}
            matrix, present = vectors[layout.primary]
            return VectorRecord(
                id=ids[i],
                vector=matrix[i] if present[i] else None,
                payload=payload,
                text=texts[i],
                collection=self.collection_name,
                named_vectors=named,
            )

        if len(vectors) > 1:
            return Batch([record(i) for i in range(len(ids))], cursor)
        stored = [(r or "").encode() for r in raw]
        if others:  # the digest sees every payload column as stored, named
            named = [dict(zip(layout.others, row, strict=True)) for row in zip(*others, strict=True)]
            stored = [json.dumps([r, columns], default=str).encode() for r, columns in zip(raw, named, strict=True)]
        matrix, present = vectors[layout.primary]
        return Batch(None, cursor, Columns(ids, matrix, present, stored, texts, record))

    def query_vector(self, vector: Sequence[float]) -> list[float] | None:
        table = self._open()
        layout = self._layout(table)
        try:
            hits = table.search(list(vector), vector_column_name=layout.primary).select([layout.primary]).limit(1)
            found = hits.to_arrow()
        except Exception as exc:
            raise ConnectorError(f"LanceDB search in {self.collection_name!r} failed: {_describe(exc)}") from exc
        if not found.num_rows:
            return None
        hit = found.column(layout.primary)[0].as_py()
        return None if hit is None else [float(x) for x in hit]

    def delete(self, ids: Sequence[str]) -> None:
        """One ``delete(where)`` per call, ids quoted as SQL literals (a new table version, like any write)."""
        if not ids:
            return
        table = self._open()
        id_type = table.schema.field(self.id_column).type
        if pa.types.is_integer(id_type):
            fitting = [int(i) for i in ids if is_integer(i) and _fits(int(i), id_type)]
            # "-9223372036854775808" parses as a float in Lance's SQL: negative keys are written as differences
            keys = [str(k) if k >= 0 else f"({k + 1} - 1)" for k in fitting]
        else:
            keys = ["'" + str(i).replace("'", "''") + "'" for i in ids]
        if not keys:
            return
        column = '"' + self.id_column.replace('"', '""') + '"'
        try:
            table.delete(f"{column} IN ({', '.join(keys)})")
        except Exception as exc:
            raise ConnectorError(f"LanceDB delete from {self.collection_name!r} failed: {_describe(exc)}") from exc

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or fully replace rows by id (``merge_insert``); every column of the row is rewritten."""
        if not records:
            return
        table = self._open()
        layout = self._layout(table)
        records = list({r.id: r for r in records}.values())  # last one wins, as with one-by-one upserts
        schema = layout.schema
        id_type = schema.field(self.id_column).type
        try:
            ids = [int(r.id) if pa.types.is_integer(id_type) else r.id for r in records]
            columns: dict[str, pa.Array] = {self.id_column: pa.array(ids, id_type)}
        except (ValueError, pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            raise VdbguardError(f"record ids do not fit the id column type {id_type}: {exc}") from exc
        for name in layout.vectors:
            columns[name] = _vector_column(records, name, name == layout.primary, schema.field(name).type)
        if layout.text:
            columns[layout.text] = pa.array([r.text for r in records], pa.string())
        payloads = [dict(r.payload) for r in records]
        for name in layout.others:  # payload keys that are columns of their own
            values = [p.pop(name, None) for p in payloads]
            try:
                columns[name] = pa.array(values, schema.field(name).type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
                raise VdbguardError(
                    f"payload key {name!r} does not fit column type {schema.field(name).type}: {exc}"
                ) from exc
        if layout.json_payload:
            for r, payload in zip(records, payloads, strict=True):
                if r.text is not None and not layout.text:
                    payload["text"] = r.text
            columns[layout.json_payload] = pa.array([_to_json(r.id, p) for r, p in zip(records, payloads, strict=True)])
        else:
            for r, payload in zip(records, payloads, strict=True):
                if payload:
                    raise RecordError(r.id, "payload", f"has keys {sorted(payload)} that are not columns of the table")
        data = pa.Table.from_arrays([columns[n] for n in schema.names], schema=schema)
        try:
            builder = table.merge_insert(self.id_column).when_matched_update_all().when_not_matched_insert_all()
            builder.execute(data)
        except Exception as exc:
            raise ConnectorError(f"LanceDB upsert into {self.collection_name!r} failed: {_describe(exc)}") from exc

    def ensure_collection(self, dimension: int, metric: str = "cosine", vector_names: Sequence[str] = ()) -> None:
        db = self._connect(create=True)
        if self.collection_name in self._table_names():
            return
        names = list(vector_names) or ["vector"]
        text = self.text_column if self.text_column not in names else "document"
        if len({self.id_column, text, "payload", *names}) != len(names) + 3:
            raise VdbguardError(f"vector names {names} clash with the id, document or payload column")
        meta = {"metric": normalise_metric(metric), "text": text, "payload": "payload"}
        fields = [pa.field(self.id_column, pa.string(), nullable=False)]
        fields += [pa.field(n, pa.list_(pa.float32(), dimension)) for n in names]
        fields += [pa.field(text, pa.string()), pa.field("payload", pa.string())]
        schema = pa.schema(fields, metadata={_META_KEY: json.dumps(meta).encode()})
        try:
            db.create_table(self.collection_name, schema=schema)
        except Exception as exc:
            if self.collection_name in self._table_names():  # created concurrently: never alter it
                return
            raise ConnectorError(f"cannot create LanceDB table {self.collection_name!r}: {_describe(exc)}") from exc

    def close(self) -> None:
        self._db = None


class _Layout:
    """Which columns of a table hold what."""

    def __init__(
        self,
        schema: pa.Schema,
        vectors: list[str],
        primary: str,
        text: str | None,
        json_payload: str | None,
        others: list[str],
        metric: str | None,
    ) -> None:
        self.schema, self.vectors, self.primary, self.text = schema, vectors, primary, text
        self.json_payload, self.others, self.metric = json_payload, others, metric


def _local_manifests(location: str, table: str) -> str | None:
    """A digest of a local table's version manifests, read without LanceDB: every commit writes a new manifest
    (which holds its time and its fragments), so the names, sizes and times of all of them and the bytes of the
    newest change with every write, a table made again included. None for object stores and unknown layouts."""
    versions = Path(location) / f"{table}.lance" / "_versions"
    if "://" in location or not versions.is_dir():
        return None
    digest, newest = hashlib.sha256(), None
    try:
        entries = sorted((e for e in os.scandir(versions) if e.name.endswith(".manifest")), key=lambda e: e.name)
        for entry in entries:
            stat = entry.stat()
            digest.update(f"{entry.name} {stat.st_size} {stat.st_mtime_ns}\n".encode())
            number = _manifest_version(entry.name)
            if number is not None and (newest is None or number > newest[0]):
                newest = (number, entry.path)
        if newest is None:
            return None
        digest.update(Path(newest[1]).read_bytes())
    except OSError:  # a cleanup ran while it was listed: the next run reads the store
        return None
    return digest.hexdigest()


def _manifest_version(name: str) -> int | None:
    """The version a manifest file commits: ``<v>.manifest``, or ``<2^64 - 1 - v>.manifest`` (20 digits), the
    naming that lists the newest first."""
    stem = name.removesuffix(".manifest")
    if not stem.isdigit():
        return None
    number = int(stem)
    return (2**64 - 1 - number) if len(stem) == 20 and number >= 2**63 else number


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _schema_meta(schema: pa.Schema) -> dict[str, Any]:
    raw = (schema.metadata or {}).get(_META_KEY)
    try:
        meta = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def _is_vector(dtype: pa.DataType) -> bool:
    return pa.types.is_fixed_size_list(dtype) and pa.types.is_floating(dtype.value_type)


def _index_metric(table: Any, column: str) -> str | None:
    """The distance type of a vector index on ``column`` (LanceDB keeps the metric only there)."""
    try:
        for index in table.list_indices():
            if list(getattr(index, "columns", [])) == [column]:
                distance = getattr(table.index_stats(index.name), "distance_type", None)
                if distance:
                    return normalise_metric(str(distance))
    except Exception:
        return None
    return None


def _one_array(column: pa.ChunkedArray) -> pa.Array:
    """The column as one array, copied only when it has several chunks (``combine_chunks`` always copies)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _matrix(column: pa.FixedSizeListArray) -> tuple[np.ndarray, np.ndarray]:
    """A fixed-size-list column as one float32 matrix (bit-exact for float32 columns) and which rows hold a
    vector (a null row's slots are left as they are stored)."""
    dim, rows = column.type.list_size, len(column)
    values = column.values.slice(column.offset * dim, rows * dim)
    matrix = values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(rows, dim)
    present = np.ones(rows, dtype=bool) if not column.null_count else column.is_valid().to_numpy(zero_copy_only=False)
    return matrix, present


def _vector_column(records: Sequence[VectorRecord], name: str, primary: bool, dtype: pa.DataType) -> pa.Array:
    """Validated vectors of one column for every record; RecordError (nothing written) if any is bad."""
    rows = []
    for r in records:
        vector = r.named_vectors.get(name) if r.named_vectors else None
        if vector is None and primary:
            rows.append(r.checked_vector(dtype.list_size))
            continue
        if vector is None:
            raise RecordError(r.id, f"named_vectors[{name!r}]", "is missing")
        rows.append(VectorRecord(r.id, vector).checked_vector(dtype.list_size))
    values = pa.array(np.stack(rows).ravel(), type=pa.float32()).cast(dtype.value_type)
    return pa.FixedSizeListArray.from_arrays(values, dtype.list_size)


def _to_json(record_id: str, payload: dict[str, Any]) -> str:
    def default(value: Any) -> Any:
        if isinstance(value, np.generic):
            return value.item()
        raise TypeError(type(value).__name__)

    try:
        encoded = json.dumps(payload, default=default, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise RecordError(record_id, "payload", f"is not JSON-serialisable: {exc}") from exc
    return encoded


def _fits(key: int, id_type: pa.DataType) -> bool:
    try:
        pa.scalar(key, id_type)
    except (pa.ArrowInvalid, OverflowError):
        return False
    return True


def _cursor(version: int, offset: int) -> str:
    return json.dumps({"version": version, "offset": offset})


def _parse_cursor(cursor: str | None) -> tuple[int | None, int]:
    if cursor is None:
        return None, 0
    try:
        data = json.loads(cursor)
        version, offset = int(data["version"]), int(data["offset"])
    except (ValueError, TypeError, KeyError) as exc:
        raise VdbguardError(f"bad LanceDB resume cursor {cursor!r}", _CURSOR_HINT) from exc
    if version < 1 or offset < 0:
        raise VdbguardError(f"bad LanceDB resume cursor {cursor!r}", _CURSOR_HINT)
    return version, offset
