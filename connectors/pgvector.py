"""pgvector adapter: one PostgreSQL table with one or more ``vector``/``halfvec`` columns."""

from __future__ import annotations

import json
import os
import re
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np
import psycopg
from pgvector.psycopg.halfvec import register_halfvec_info
from pgvector.psycopg.vector import register_vector_info
from psycopg import sql
from psycopg.abc import Buffer
from psycopg.adapt import Loader
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import Format
from psycopg.types import TypeInfo
from psycopg.types.json import Jsonb
from vdbguard.connectors.base import CollectionInfo, Connector
from vdbguard.connectors.support import StoreCalls, Tls, log, metric_name, tls_hint

from vdbguard.credentials import remember_secret, scrub, split_userinfo
from vdbguard.errors import CollectionNotFoundError, ConnectorError, RecordError, VdbguardError
from vdbguard.records import Batch, VectorRecord

T = TypeVar("T")

_VECTOR_TYPES = ("vector", "halfvec")
_VECTOR_TABLES = """
    SELECT DISTINCT CASE WHEN pg_table_is_visible(c.oid) THEN c.relname ELSE n.nspname || '.' || c.relname END
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_type t ON t.oid = a.atttypid
    WHERE t.typname = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped
      AND c.relkind IN ('r', 'p', 'm', 'f') AND NOT c.relispartition
      AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%%'
"""
_TEXT_COLUMNS = ("text", "document", "content")
_PAYLOAD_COLUMNS = ("payload", "metadata", "cmetadata", "metadata_")
# Serialization failures, deadlocks, lock/statement timeouts, server shutting down or starting, too many
# connections; class 08 (connection exceptions) is checked separately.
_TRANSIENT_STATES = {"40001", "40P01", "55P03", "57014", "57P01", "57P02", "57P03", "53300"}
_URL_FORM = re.compile(r"(?i)postgres(ql)?://")
_AUTH_FAILURE = re.compile(r"authentication failed|no pg_hba\.conf entry|no password supplied|password is required")
_START_HINT = "is the server running and listening there? check the host and port in the URL (or PGHOST/PGPORT)"


@dataclass(frozen=True)
class _Column:
    name: str
    type: str  # format_type(): usable in CAST(... AS type)
    typname: str
    typmod: int
    binary: bool  # psycopg can load it in binary format; else it is selected as text
    writable: bool
    oid: int


@dataclass(frozen=True)
class _Table:
    schema: str
    name: str
    ident: sql.Composable
    id: _Column
    vectors: tuple[_Column, ...]  # the primary (scanned) one first
    text: _Column | None
    payload: _Column | None
    others: tuple[_Column, ...]
    metrics: dict[str, str]  # vector column -> index operator class


_UNVERIFIED_SSLMODES = ("disable", "allow", "prefer", "require")


def _tls_settings(params: dict[str, Any], host: str, tls: Tls) -> dict[str, str]:
    """libpq settings for ``tls``: a server off this machine is verified against the system's CAs
    (``sslmode=verify-full``) unless the URL sets ``sslmode`` itself; a CA file is the root to verify against."""
    sslmode = str(params.get("sslmode") or os.environ.get("PGSSLMODE") or "")
    local = host.startswith("/") or host in ("localhost", "127.0.0.1", "::1")
    if not tls.verify:
        return {}
    if tls.ca_file:
        if sslmode in _UNVERIFIED_SSLMODES:
            raise VdbguardError(
                f"sslmode={sslmode} in the URL turns certificate checks off, but a CA file was given",
                "drop sslmode from the URL (or set it to verify-full)",
            )
        return {"sslmode": sslmode or "verify-full", "sslrootcert": tls.ca_file}
    if sslmode:
        if sslmode in _UNVERIFIED_SSLMODES and not local:
            log.warning("sslmode=%s does not verify the certificate of %s: use sslmode=verify-full", sslmode, host)
        return {}
    if local:
        return {}
    return {"sslmode": "verify-full", **({} if params.get("sslrootcert") else {"sslrootcert": "system"})}


class PgvectorConnector(StoreCalls, Connector):
    """One table of a PostgreSQL database with the pgvector extension.

    Which table: ``collection`` is a table (or view) name as written (case-sensitive, never folded to
    lower case) found through the ``search_path``; failing that, ``schema.table``. Connection: ``url``
    is a libpq URL or conninfo string (``postgresql://user:password@host:5432/db``); whatever it leaves
    out comes from the usual ``PGHOST``/``PGPORT``/``PGUSER``/``PGPASSWORD``/``PGDATABASE`` variables
    or ``~/.pgpass``. The password is never logged or put in error messages.

    What is read, per row: ``id_column`` (default ``id``; it needs a primary key or single-column
    unique index, else paging could lose rows, so the connector refuses) becomes ``record.id`` (as a
    string). Every ``vector`` and ``halfvec`` column is a vector: ``vector_name`` picks the one
    scanned as ``record.vector`` (default: the first column). A table with several vector columns
    reports them as ``vector_names`` and fills ``record.named_vectors`` with all of them; with one,
    both stay empty. ``text_column`` (default: the first text-typed column named text, document or
    content) becomes ``record.text``. ``payload_column`` (default: the first json/jsonb column named
    payload, metadata, cmetadata or metadata_): the keys of its JSON object are merged into
    ``record.payload``. Every other column is a payload key of its own (NULLs left out; a column wins
    over a JSON key of the same name; types psycopg cannot load, like tsvector, come as text).
    ``vector`` values come back bit for bit (float32, binary protocol); ``halfvec`` values are
    widened exactly to float32.

    Paging: keyset pagination, ``WHERE id > last ORDER BY id LIMIT batch_size``, each page in its own
    short ``READ ONLY`` transaction, so the engine itself refuses any write during a scan and no
    snapshot is held between pages. Cursors are JSON, ``{"after": <last id>}``; resuming one, even in
    a new process, continues after that id. Concurrent writes: every row that exists for the whole
    scan is read exactly once; rows inserted or updated during the scan are seen (with their new
    values) if their id sorts after the current position, and rows deleted before their page is read
    are not seen. Caveat (measured, PostgreSQL 15): the first read of pages holding rows that
    were updated or deleted lets PostgreSQL prune them, which writes WAL although no data changes; a
    READ ONLY transaction cannot stop that housekeeping.

    Metric: pgvector stores none per column; ``describe()`` reads it from the operator class of an
    HNSW/IVFFlat index on the scanned column (``vector_cosine_ops`` -> cosine, ``vector_l2_ops`` ->
    l2, ``vector_ip_ops`` -> ip, same for halfvec), else it reports the ``metric`` option (default
    None).

    Writes: ``upsert()`` is ``INSERT ... ON CONFLICT (id) DO UPDATE`` in one transaction, built and
    checked in full before anything is sent (nothing is written if a record is bad). Full replace:
    columns a record has no payload key for are reset to their default (NULL unless the table says
    otherwise) and the JSON payload column is rewritten whole; without a text column, ``record.text``
    is kept in the payload under ``"text"``. ``ensure_collection()`` creates the extension if needed
    and, if no such table exists, ``id text PRIMARY KEY``, one ``vector(d)`` column per vector name
    (else ``vector_name`` or ``embedding``), ``text`` (``document`` if a vector is called text) and
    ``payload jsonb``, plus an HNSW index per vector with the metric's operator class, which is how
    ``describe()`` finds the metric again (pgvector indexes at most 2000 dimensions: bigger tables
    get no index and no recorded metric). A dotted name creates ``schema.table`` if that schema
    exists, else a table with the dotted name.

    Transient errors (serialization failures, deadlocks, lock and statement timeouts, a connection
    dropped or refused after it had worked, e.g. a server restart, too many connections) are retried
    on a fresh connection; a first connection that fails is not retried, so a wrong host or password
    fails at once.
    """

    name: ClassVar[str] = "pgvector"

    def __init__(
        self,
        *,
        collection: str,
        url: str | None = None,
        id_column: str = "id",
        vector_name: str | None = None,
        text_column: str | None = None,
        payload_column: str | None = None,
        metric: str | None = None,
        connect_timeout: int | str = 5,
        tls_verify: bool | str = True,
    ) -> None:
        self.collection_name = collection
        self.id_column = id_column
        self.vector_name = vector_name
        self.text_column = text_column
        self.payload_column = payload_column
        self.metric = _normalise_metric(metric) if metric else None
        self._connect_timeout = int(connect_timeout)
        self._conninfo = url or ""
        _refuse_misread_userinfo(self._conninfo)
        try:
            params = conninfo_to_dict(self._conninfo)
        except psycopg.ProgrammingError:
            raise VdbguardError(  # not chained: the parser's message quotes the URL, password included
                "cannot parse the PostgreSQL URL", "use postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
            ) from None
        self._secret = str(params.get("password") or os.environ.get("PGPASSWORD") or "")
        remember_secret(self._secret)
        host = str(params.get("host") or os.environ.get("PGHOST") or "localhost")
        port = str(params.get("port") or os.environ.get("PGPORT") or "5432")
        database = str(params.get("dbname") or os.environ.get("PGDATABASE") or params.get("user") or "")
        self._user = str(params.get("user") or os.environ.get("PGUSER") or "")
        self.location = f"{host}:{port}/{database}" if database else f"{host}:{port}"
        self._tls = _tls_settings(params, host, Tls(tls_verify, self.location))
        self._conn: psycopg.Connection | None = None
        self._connected_once = False
        self._table: _Table | None = None

    # -- connection handling -------------------------------------------------------------------

    def _connection(self) -> psycopg.Connection:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        conn = psycopg.connect(
            self._conninfo,
            connect_timeout=self._connect_timeout,
            application_name="vdbguard",
            autocommit=False,
            **self._tls,
        )
        conn.read_only = True  # every transaction this connector opens is READ ONLY unless it writes
        self._conn = conn
        self._connected_once = True
        try:
            with conn.transaction():
                _register_vector_types(conn)
        except BaseException:
            self._drop_connection()
            raise
        return conn

    def _drop_connection(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    def _run(self, what: str, fn: Callable[[psycopg.Connection], T], *, write: bool = False) -> T:
        """``fn(conn)`` in one transaction (READ ONLY unless ``write``), retried on transient errors."""

        def attempt() -> T:
            conn = self._connection()
            conn.read_only = not write
            try:
                with conn.transaction():
                    return fn(conn)
            except psycopg.Error:
                if conn.closed or conn.broken:
                    self._drop_connection()
                raise
            finally:
                if not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                    conn.read_only = True

        return self._call(what, attempt)

    store: ClassVar[str] = "PostgreSQL"
    store_error = psycopg.Error

    def _transient(self, exc: BaseException) -> bool:
        if not isinstance(exc, psycopg.Error):
            return False
        state = exc.sqlstate
        if state:
            return state.startswith("08") or state in _TRANSIENT_STATES
        # No SQLSTATE: the connection failed or dropped. Retry only a connection that worked before
        # (a server restart mid-scan); a first connection to a wrong host or with a wrong password fails at once.
        return isinstance(exc, psycopg.OperationalError) and self._connected_once and not _is_auth_failure(exc)

    def _scrub(self, text: str) -> str:
        return scrub(" ".join(text.split()), [self._secret])

    def _failed(self, what: str, exc: BaseException) -> VdbguardError:
        assert isinstance(exc, psycopg.Error)
        detail = self._scrub(str(exc))
        if _is_auth_failure(exc):
            user = f" for user {self._user!r}" if self._user else ""
            return ConnectorError(
                f"PostgreSQL at {self.location} rejected the credentials{user}",
                "check the user and password in the URL (or PGUSER/PGPASSWORD, ~/.pgpass)",
            )
        if exc.sqlstate is None and isinstance(exc, psycopg.OperationalError) and not self._connected_once:
            hint = _START_HINT + tls_hint(exc)
            if "does not support SSL" in detail:
                hint = "the server offers no TLS: enable ssl on it, or pass --insecure on a trusted network"
            return ConnectorError(f"cannot connect to PostgreSQL at {self.location}: {detail}", hint)
        if exc.sqlstate == "42501":
            return ConnectorError(
                f"{self._where(what)} was refused: {detail}",
                "the user needs SELECT on the table (and INSERT/UPDATE to write)",
            )
        return self._failure(what, exc)

    # -- table layout --------------------------------------------------------------------------

    def _layout(self) -> _Table:
        if self._table is None:
            self._table = self._run("describe", self._load_layout)
        return self._table

    def _find(self, conn: psycopg.Connection) -> tuple[int, str, str, str] | None:
        query = """
            SELECT c.oid, n.nspname, c.relname, c.relkind FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relname = %(table)s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
              AND (n.nspname = %(schema)s OR (%(schema)s::text IS NULL AND pg_table_is_visible(c.oid)))
        """
        for schema, table in _candidates(self.collection_name):
            row = conn.execute(query, {"table": table, "schema": schema}).fetchone()
            if row is not None:
                return int(row[0]), row[1], row[2], row[3]
        return None

    def _not_found(self, conn: psycopg.Connection) -> CollectionNotFoundError:
        rows = conn.execute(
            """
            SELECT DISTINCT CASE WHEN pg_table_is_visible(c.oid) THEN c.relname ELSE n.nspname || '.' || c.relname END
            FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_type t ON t.oid = a.atttypid
            WHERE t.typname = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
              AND n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1 LIMIT 50
            """,
            (list(_VECTOR_TYPES),),
        ).fetchall()
        existing = ", ".join(r[0] for r in rows) or "none"
        return CollectionNotFoundError(
            f"PostgreSQL table {self.collection_name!r} not found at {self.location}",
            f"tables with vector columns: {existing}",
        )

    def _load_layout(self, conn: psycopg.Connection) -> _Table:
        found = self._find(conn)
        if found is None:
            raise self._not_found(conn)
        oid, schema, table, relkind = found
        rows = conn.execute(
            """
            SELECT a.attnum, a.attname, a.atttypid, format_type(a.atttypid, a.atttypmod), t.typname, a.atttypmod,
                   a.attgenerated = '' AND a.attidentity <> 'a'
            FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
            WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
            """,
            (oid,),
        ).fetchall()
        columns = {
            r[1]: _Column(
                r[1], r[3], r[4], int(r[5]), conn.adapters.get_loader(r[2], Format.BINARY) is not None, r[6], r[2]
            )
            for r in rows
        }
        attnums = {r[1]: int(r[0]) for r in rows}
        where = f"{self.collection_name!r} at {self.location}"
        if self.id_column not in columns:
            raise ConnectorError(
                f"PostgreSQL table {where} has no column {self.id_column!r}",
                f"pass id_column=<one of: {', '.join(columns)}>",
            )
        if relkind in ("r", "p", "m"):
            unique = conn.execute(
                """SELECT 1 FROM pg_index WHERE indrelid = %s AND indisunique AND indnkeyatts = 1
                   AND indkey[0] = %s AND indpred IS NULL AND indexprs IS NULL""",
                (oid, attnums[self.id_column]),
            ).fetchone()
            if unique is None:
                raise ConnectorError(
                    f"column {self.id_column!r} of PostgreSQL table {where} is not unique",
                    "paging needs a primary key or unique index on it: pass id_column=<a unique column>",
                )
        vectors = [c for c in columns.values() if c.typname in _VECTOR_TYPES and c.name != self.id_column]
        if not vectors:
            raise ConnectorError(f"PostgreSQL table {where} has no vector or halfvec column")
        if self.vector_name is not None:
            chosen = [c for c in vectors if c.name == self.vector_name]
            if not chosen:
                raise ConnectorError(
                    f"PostgreSQL table {where} has no vector column {self.vector_name!r}",
                    f"vector columns: {', '.join(c.name for c in vectors)}",
                )
            vectors = chosen + [c for c in vectors if c.name != self.vector_name]
        text = self._pick(columns, self.text_column, _TEXT_COLUMNS, ("text", "character varying", "character"), where)
        payload = self._pick(columns, self.payload_column, _PAYLOAD_COLUMNS, ("json", "jsonb"), where)
        special = {self.id_column, *(c.name for c in vectors), text and text.name, payload and payload.name}
        metrics = dict(
            conn.execute(
                """
                SELECT a.attname, opc.opcname FROM pg_index i
                JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am am ON am.oid = ic.relam
                CROSS JOIN LATERAL unnest(i.indkey::int2[], i.indclass::oid[]) AS k(attnum, opclass)
                JOIN pg_opclass opc ON opc.oid = k.opclass
                JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                WHERE i.indrelid = %s AND am.amname IN ('hnsw', 'ivfflat') ORDER BY ic.relname
                """,
                (oid,),
            ).fetchall()[::-1]  # the first index (by name) wins
        )
        return _Table(
            schema=schema,
            name=table,
            ident=sql.Identifier(schema, table),
            id=columns[self.id_column],
            vectors=tuple(vectors),
            text=text,
            payload=payload,
            others=tuple(c for c in columns.values() if c.name not in special),
            metrics=metrics,
        )

    @staticmethod
    def _pick(
        columns: dict[str, _Column], wanted: str | None, defaults: Sequence[str], types: Sequence[str], where: str
    ) -> _Column | None:
        if wanted is not None:
            if wanted not in columns:
                raise ConnectorError(f"PostgreSQL table {where} has no column {wanted!r}")
            return columns[wanted]
        for name in defaults:
            column = columns.get(name)
            if column is not None and column.type.split("(")[0] in types:
                return column
        return None

    # -- Connector API -------------------------------------------------------------------------

    def _collection_names(self) -> list[str]:
        """Every table with a ``vector`` or ``halfvec`` column, in every schema but the system's: by its own name
        where the ``search_path`` finds it, else as ``schema.table`` (how ``collection`` names it). Views are left
        out (their rows live in the tables they read, listed themselves), and so are partitions (their rows are
        read through the partitioned table)."""
        rows = self._run("list tables", lambda conn: conn.execute(_VECTOR_TABLES, (list(_VECTOR_TYPES),)).fetchall())
        return [row[0] for row in rows]

    def describe(self) -> CollectionInfo:
        table = self._layout()
        primary = table.vectors[0]

        def read(conn: psycopg.Connection) -> tuple[int, int | None]:
            count = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(table.ident)).fetchone()
            dimension = primary.typmod if primary.typmod > 0 else None
            if dimension is None:
                query = sql.SQL("SELECT array_length({c}::real[], 1) FROM {t} WHERE {c} IS NOT NULL LIMIT 1")
                row = conn.execute(query.format(c=sql.Identifier(primary.name), t=table.ident)).fetchone()
                dimension = int(row[0]) if row else None
            return int(count[0]) if count else 0, dimension

        count, dimension = self._run("count", read)
        opclass = table.metrics.get(primary.name)
        metric = _metric_of(opclass) if opclass else self.metric
        return CollectionInfo(
            name=self.collection_name,
            dimension=dimension,
            count=count,
            metric=metric,
            vector_names=tuple(c.name for c in table.vectors) if len(table.vectors) > 1 else (),
            extra={
                "location": self.location,
                "schema": table.schema,
                "table": table.name,
                "id_column": table.id.name,
                "vector_column": primary.name,
                "text_column": table.text.name if table.text else None,
                "payload_column": table.payload.name if table.payload else None,
                "index_opclass": opclass,
            },
        )

    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
        """Pages of at most ``batch_size`` rows in id order; every batch's cursor resumes after it."""
        if batch_size < 1:
            raise VdbguardError(f"batch_size must be at least 1, got {batch_size}")
        after = _parse_cursor(resume_from)
        table = self._layout()
        selected = [table.id, *table.vectors]
        if table.text is not None:
            selected.append(table.text)
        if table.payload is not None:
            selected.append(table.payload)
        selected += table.others
        columns = sql.SQL(", ").join(
            sql.Identifier(c.name) if c.binary else sql.SQL("{}::text").format(sql.Identifier(c.name)) for c in selected
        )
        base = sql.SQL("SELECT {cols} FROM {t}").format(cols=columns, t=table.ident)
        order = sql.SQL(" ORDER BY {id} LIMIT %(n)s").format(id=sql.Identifier(table.id.name))
        after_clause = sql.SQL("{id} > CAST(%(after)s::text AS {type})").format(
            id=sql.Identifier(table.id.name), type=sql.SQL(table.id.type)
        )
        while True:
            query = base + (sql.SQL(" WHERE ") + after_clause if after is not None else sql.SQL("")) + order
            params = {"n": batch_size, "after": None if after is None else str(after)}

            def page(conn: psycopg.Connection, query: sql.Composable = query, params: dict = params) -> list:
                with conn.cursor(binary=True) as cur:
                    for column in table.vectors:
                        if column.binary:  # as bytes: a page's vectors become one matrix (_page_vectors)
                            cur.adapters.register_loader(column.oid, _BytesLoader)
                    return cur.execute(query, params).fetchall()

            rows = self._run("read", page)
            if not rows:
                return
            records = self._records(table, rows)
            cursor = _cursor(rows[-1][0])
            after = _parse_cursor(cursor)
            yield Batch(records, cursor)
            if len(rows) < batch_size:
                return

    def query_vector(self, vector: Sequence[float]) -> list[float] | None:
        """The nearest row by the column's index metric (l2 without one), as any search client would ask."""
        table = self._layout()
        primary = table.vectors[0]
        opclass = table.metrics.get(primary.name)
        operator = _OPERATORS[(_metric_of(opclass) if opclass else None) or self.metric or "l2"]
        nearest = "SELECT {c} FROM {t} WHERE {c} IS NOT NULL ORDER BY {c} {op} CAST(%s AS {type}) LIMIT 1"
        query = sql.SQL(nearest).format(
            c=sql.Identifier(primary.name), t=table.ident, op=sql.SQL(operator), type=sql.SQL(primary.type)
        )
        literal = "[" + ",".join(repr(float(x)) for x in vector) + "]"

        def search(conn: psycopg.Connection) -> Any:
            with conn.cursor(binary=True) as cur:
                return cur.execute(query, (literal,)).fetchone()

        row = self._run("search", search)
        hit = _as_float32(row[0]) if row else None
        return None if hit is None else [float(x) for x in hit]

    def _records(self, table: _Table, rows: list[tuple[Any, ...]]) -> list[VectorRecord]:
        """A page's rows as records, column by column (vectors as one matrix per column)."""
        columns = iter(zip(*rows, strict=True))
        ids = [str(value) for value in next(columns)]
        vectors = {c.name: _page_vectors(c, ids, next(columns)) for c in table.vectors}
        texts = next(columns) if table.text is not None else [None] * len(rows)
        payloads = [{} for _ in rows] if table.payload is None else [_payload(table.payload, v) for v in next(columns)]
        for column in table.others:
            for payload, value in zip(payloads, next(columns), strict=True):
                if value is not None:
                    payload[column.name] = value
        primary = vectors[table.vectors[0].name]
        named: list[dict[str, np.ndarray]] = [{} for _ in rows]
        if len(vectors) > 1:
            named = [
                {name: column[i] for name, column in vectors.items() if column[i] is not None} for i in range(len(rows))
            ]
        collection = self.collection_name
        return [
            VectorRecord(
                id=record_id,
                vector=vector,
                payload=payload,
                text=None if text is None else str(text),
                collection=collection,
                named_vectors=named_vectors,
            )
            for record_id, vector, text, payload, named_vectors in zip(
                ids, primary, texts, payloads, named, strict=True
            )
        ]

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or fully replace ``records`` in one transaction (see the class docstring)."""
        if not records:
            return
        table = self._layout()
        dims = {c.name: c.typmod if c.typmod > 0 else None for c in table.vectors}
        primary = table.vectors[0].name
        prepared = []
        for record in records:  # validate and build everything before writing anything
            vectors = {}
            for column in table.vectors:
                if column.name == primary and column.name not in record.named_vectors:
                    vectors[column.name] = record.checked_vector(dims[column.name])
                elif column.name in record.named_vectors:
                    named = VectorRecord(record.id, record.named_vectors[column.name])
                    try:
                        vectors[column.name] = named.checked_vector(dims[column.name])
                    except RecordError as exc:
                        raise RecordError(record.id, f"named_vectors[{column.name!r}]", exc.problem) from exc
                else:
                    vectors[column.name] = None
            prepared.append((record, vectors))
        statements: dict[tuple[str, ...], tuple[sql.Composable, list[list[Any]]]] = {}
        writable = [c for c in table.others if c.writable]
        for record, vectors in prepared:
            payload = dict(record.payload)
            if table.text is None and record.text is not None:
                payload["text"] = record.text
            present = tuple(c.name for c in writable if c.name in payload)
            values: list[Any] = [record.id, *vectors.values()]
            if table.text is not None:
                values.append(record.text)
            values += [_adapt(c, payload.pop(c.name)) for c in writable if c.name in present]
            if table.payload is not None:
                try:
                    json.dumps(payload)
                except (TypeError, ValueError) as exc:
                    raise RecordError(record.id, "payload", f"is not JSON-serialisable: {exc}") from exc
                values.append(Jsonb(payload) if payload else None)
            elif payload:
                raise RecordError(
                    record.id,
                    "payload",
                    f"has keys {sorted(payload)} that the table has no column for (and no json payload column)",
                )
            if present not in statements:
                statements[present] = (self._upsert_statement(table, writable, present), [])
            statements[present][1].append(values)

        def write(conn: psycopg.Connection) -> None:
            with conn.cursor() as cur:
                for statement, rows in statements.values():
                    cur.executemany(statement, rows)

        self._run("upsert", write, write=True)

    def delete(self, ids: Sequence[str]) -> None:
        """Delete the rows with these ids in one transaction."""
        if not ids:
            return
        table = self._layout()
        statement = sql.SQL("DELETE FROM {t} WHERE {id} = CAST(%s AS {type})").format(
            t=table.ident, id=sql.Identifier(table.id.name), type=sql.SQL(table.id.type)
        )

        def write(conn: psycopg.Connection) -> None:
            with conn.cursor() as cur:
                cur.executemany(statement, [[record_id] for record_id in ids])

        self._run("delete", write, write=True)

    @staticmethod
    def _upsert_statement(table: _Table, writable: Sequence[_Column], present: Sequence[str]) -> sql.Composable:
        names: list[str] = [table.id.name, *(c.name for c in table.vectors)]
        values: list[sql.Composable] = [
            sql.SQL("CAST(%s AS {})").format(sql.SQL(c.type)) for c in (table.id, *table.vectors)
        ]
        if table.text is not None:
            names.append(table.text.name)
            values.append(sql.SQL("CAST(%s AS {})").format(sql.SQL(table.text.type)))
        for column in writable:
            names.append(column.name)
            cast = sql.SQL("CAST(%s AS {})").format(sql.SQL(column.type))
            values.append(cast if column.name in present else sql.SQL("DEFAULT"))
        if table.payload is not None:
            names.append(table.payload.name)
            values.append(sql.SQL("CAST(%s AS {})").format(sql.SQL(table.payload.type)))
        updates = sql.SQL(", ").join(sql.SQL("{c} = EXCLUDED.{c}").format(c=sql.Identifier(name)) for name in names[1:])
        return sql.SQL("INSERT INTO {t} ({cols}) VALUES ({vals}) ON CONFLICT ({id}) DO UPDATE SET {updates}").format(
            t=table.ident,
            cols=sql.SQL(", ").join(map(sql.Identifier, names)),
            vals=sql.SQL(", ").join(values),
            id=sql.Identifier(table.id.name),
            updates=updates,
        )

    def ensure_collection(self, dimension: int, metric: str = "cosine", vector_names: Sequence[str] = ()) -> None:
        metric = _normalise_metric(metric)
        names = list(vector_names) or [self.vector_name or "embedding"]
        text = next((n for n in ("text", "document", "content") if n not in names), "body")
        clash = {self.id_column, "payload"} & set(names)
        if clash or len(set(names)) != len(names):
            raise VdbguardError(f"vector names {names} clash with each other or with the {sorted(clash)} column")
        if dimension < 1:
            raise VdbguardError(f"dimension must be positive, got {dimension}")

        def create(conn: psycopg.Connection) -> None:
            if self._find(conn) is not None:
                return
            extension = (
                "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
                " WHERE e.extname = 'vector'"
            )
            row = conn.execute(extension).fetchone()
            if row is None:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                row = conn.execute(extension).fetchone()
            assert row is not None
            home = sql.Identifier(row[0])  # the extension's schema: it need not be on the search_path
            ident = sql.Identifier(self.collection_name)
            schema, table = _candidates(self.collection_name)[-1]
            if schema and conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone():
                ident = sql.Identifier(schema, table)  # "schema.table" when that schema exists, else the name as is
            columns = [sql.SQL("{} text PRIMARY KEY").format(sql.Identifier(self.id_column))]
            columns += [
                sql.SQL("{} {}.vector({})").format(sql.Identifier(n), home, sql.Literal(dimension)) for n in names
            ]
            columns += [sql.SQL("{} text").format(sql.Identifier(text)), sql.SQL("payload jsonb")]
            conn.execute(sql.SQL("CREATE TABLE {} ({})").format(ident, sql.SQL(", ").join(columns)))
            if dimension <= 2000:  # pgvector's HNSW limit for vector
                opclass = sql.SQL("{}.{}").format(home, sql.Identifier(f"vector_{metric}_ops"))
                for name in names:
                    conn.execute(
                        sql.SQL("CREATE INDEX ON {} USING hnsw ({} {})").format(ident, sql.Identifier(name), opclass)
                    )

        try:
            self._run("create table", create, write=True)
        except ConnectorError as exc:
            if not isinstance(exc.__cause__, psycopg.errors.DuplicateTable | psycopg.errors.UniqueViolation):
                raise  # else someone else created it at the same time: leave theirs alone
        if self._conn is not None and not self._conn.closed:
            self._drop_connection()  # re-register the vector type if the extension was just created
        self._table = None

    def close(self) -> None:
        self._table = None
        if self._conn is not None:
            self._drop_connection()


def _register_vector_types(conn: psycopg.Connection) -> None:
    """pgvector's psycopg adapters for ``vector`` and ``halfvec``, wherever the extension lives: it may
    be installed in a schema that is not on the search_path (Supabase's ``extensions``, say)."""
    rows = conn.execute(
        """SELECT n.nspname, t.typname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
           JOIN pg_type t ON t.typnamespace = n.oid AND t.typname IN ('vector', 'halfvec') WHERE e.extname = 'vector'"""
    ).fetchall()
    register = {"vector": register_vector_info, "halfvec": register_halfvec_info}
    for schema, typname in rows:
        info = TypeInfo.fetch(conn, sql.Identifier(schema, typname))
        if info is not None:
            register[typname](conn, info)


def _candidates(collection: str) -> list[tuple[str | None, str]]:
    """``name`` as one (case-sensitive) table name, then, if it has a dot, as ``schema.table``."""
    found: list[tuple[str | None, str]] = [(None, collection)]
    if "." in collection:
        schema, _, table = collection.partition(".")
        found.append((schema, table))
    return found


_OPERATORS = {"cosine": "<=>", "l2": "<->", "ip": "<#>"}


def _normalise_metric(metric: str) -> str:
    normalised = metric_name(metric)
    if normalised is None:
        raise VdbguardError(f"unknown metric {metric!r}", "use one of: cosine, l2, ip")
    return normalised


def _metric_of(opclass: str) -> str | None:
    """``vector_cosine_ops`` / ``halfvec_l2_ops`` / ... -> cosine / l2 / ip (None for l1, hamming, ...)."""
    match = re.fullmatch(r"(?:vector|halfvec)_(cosine|l2|ip)_ops", opclass)
    return match.group(1) if match else None


def _cursor(last_id: Any) -> str:
    """Resumes after ``last_id``: an integer key as a number, any other (uuid, text) as its text."""
    number = isinstance(last_id, int) and not isinstance(last_id, bool)
    return json.dumps({"after": last_id if number else str(last_id)})


def _refuse_misread_userinfo(conninfo: str) -> None:
    """libpq ends a URL's user part at its first ``@`` or ``/``: a password holding either would be read as the
    host, port or database, and shown in libpq's errors. Refused before libpq sees it, naming neither."""
    userinfo = split_userinfo(conninfo).userinfo if _URL_FORM.match(conninfo) else None
    if userinfo is None:
        return
    remember_secret(split_userinfo(conninfo).password)
    if "@" in userinfo or "/" in userinfo:
        raise VdbguardError(
            "the user or password in the PostgreSQL URL holds '@' or '/', which libpq reads as the end of it",
            "percent-encode them in the URL (@ as %40, / as %2F), or leave the password out and set PGPASSWORD",
        )


def _parse_cursor(cursor: str | None) -> int | str | None:
    if cursor is None:
        return None
    try:
        after = json.loads(cursor)["after"]
    except (ValueError, TypeError, KeyError) as exc:
        raise VdbguardError(
            f"bad pgvector resume cursor {cursor!r}", 'pass a cursor taken from a pgvector scan (like {"after": "id"})'
        ) from exc
    if not isinstance(after, int | str) or isinstance(after, bool):
        raise VdbguardError(f"bad pgvector resume cursor {cursor!r}", "the cursor's 'after' must be an id")
    return after


class _BytesLoader(Loader):
    """A vector as pgvector sends it in binary: a big-endian header (dimension, 0), then the floats."""

    format = Format.BINARY

    def load(self, data: Buffer) -> bytes:
        return bytes(data)


def _page_vectors(column: _Column, ids: list[str], values: Sequence[Any]) -> list[np.ndarray | None]:
    """One column's vectors of a page as float32 rows of one matrix when they came as bytes with one header
    (NULLs aside); else (selected as text, or dimensions that differ) one by one."""
    if not column.binary:
        return [_as_float32(value) for value in values]
    width = 2 if column.typname == "halfvec" else 4
    present = [value for value in values if value is not None]
    if present:
        size, joined = len(present[0]), b"".join(present)
        if len(joined) == size * len(present) and size >= 4 and (size - 4) % width == 0:
            rows = np.frombuffer(joined, dtype=np.uint8).reshape(len(present), size)
            header = np.frombuffer(struct.pack(">HH", (size - 4) // width, 0), dtype=np.uint8)
            if (rows[:, :4] == header).all():
                shape, strides = (len(present), (size - 4) // width), (size, width)
                matrix = np.ndarray(shape, f">f{width}", joined, offset=4, strides=strides).astype(np.float32)
                found = iter(matrix)
                return [None if value is None else next(found) for value in values]
    return [
        None if value is None else _from_binary(column, record_id, value, width)
        for record_id, value in zip(ids, values, strict=True)
    ]


def _from_binary(column: _Column, record_id: str, value: bytes, width: int) -> np.ndarray:
    dimension, unused = struct.unpack_from(">HH", value) if len(value) >= 4 else (-1, -1)
    if unused or len(value) != 4 + width * dimension:
        raise RecordError(record_id, column.name, f"is not a {column.typname} value ({len(value)} bytes)")
    return np.frombuffer(value, dtype=f">f{width}", offset=4).astype(np.float32)


def _payload(column: _Column, stored: Any) -> dict[str, Any]:
    if isinstance(stored, dict):
        return stored
    return {} if stored is None else {column.name: stored}


def _as_float32(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    if hasattr(value, "to_numpy"):  # pgvector Vector / HalfVector
        value = value.to_numpy()
    elif isinstance(value, str):  # selected as text
        value = [float(v) for v in value.strip("[]").split(",")]
    return np.array(value, dtype=np.float32)


def _adapt(column: _Column, value: Any) -> Any:
    if column.typname in ("json", "jsonb") and value is not None:
        return Jsonb(value)
    return value


def _is_auth_failure(exc: BaseException) -> bool:
    state = getattr(exc, "sqlstate", None)
    return state in ("28P01", "28000") or bool(_AUTH_FAILURE.search(str(exc)))
