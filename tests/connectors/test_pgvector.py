"""The pgvector connector reads a page's vectors as one matrix per column: every value must still come back as
pgvector's own adapter reads it, whatever the column holds (halfvec, dimensions that differ row to row in an
unconstrained ``vector`` column, NULLs), at every page size. A real server (scripts/pgvector-server.sh)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

ROWS: list[tuple[str, str | None, str | None]] = [  # id, vector (any dimension), halfvec(3)
    ("a", "[1,2,3]", "[0.5,-1,2]"),
    ("b", "[4,5,6]", None),
    ("c", None, "[1,1,1]"),
    ("d", "[7,8]", "[3,0.25,-4]"),
    ("e", "[-1.5,1e-7,3.25,9]", "[2,2,2]"),
    ("f", "[0.1,0.2,0.3]", "[65504,-65504,0.001]"),
]


def _as_pgvector_reads_them(url: str) -> dict[str, tuple[Any, Any]]:
    import psycopg
    from pgvector.psycopg import register_vector

    with psycopg.connect(url) as conn:
        register_vector(conn)
        rows = conn.execute("SELECT id, embedding, small FROM mixed").fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}


@pytest.mark.parametrize("batch_size", [1, 2, 4, 100])
def test_every_vector_comes_back_as_pgvector_reads_it(pgvector_server: Any, batch_size: int) -> None:
    import psycopg
    from vdbguard.connectors.pgvector import PgvectorConnector

    with psycopg.connect(pgvector_server.url(), autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS mixed (id text PRIMARY KEY, embedding vector, small halfvec(3))")
        conn.execute("TRUNCATE mixed")
        for row in ROWS:
            conn.execute("INSERT INTO mixed VALUES (%s, %s::vector, %s::halfvec)", row)
    expected = _as_pgvector_reads_them(pgvector_server.url())
    with PgvectorConnector(collection="mixed", url=pgvector_server.url(), vector_name="embedding") as connector:
        records = [record for batch in connector.iter_batches(batch_size=batch_size) for record in batch.records]
    assert [record.id for record in records] == [row[0] for row in ROWS]
    for record in records:
        vector, small = expected[record.id]
        if vector is None:
            assert record.vector is None
        else:
            assert record.vector.dtype == np.float32
            np.testing.assert_array_equal(record.vector, vector.to_numpy())
        if small is None:
            assert "small" not in record.named_vectors
        else:
            np.testing.assert_array_equal(record.named_vectors["small"], small.to_numpy().astype(np.float32))


def test_listing_names_tables_that_hold_vectors_once_each_as_collection_opens_them(pgvector_server: Any) -> None:
    """Every table with a vector column, a schema off the search_path's as schema.table; never a view (its rows are
    a table's), a partition (its rows are read through its parent) or a table without vectors."""
    import psycopg
    from vdbguard.connectors.pgvector import PgvectorConnector

    with psycopg.connect(pgvector_server.url(), autocommit=True) as conn:
        for statement in (
            "CREATE SCHEMA IF NOT EXISTS listing_other",
            "CREATE TABLE IF NOT EXISTS listing_other.docs (id text PRIMARY KEY, embedding vector(2))",
            "CREATE TABLE IF NOT EXISTS listing_plain (id text PRIMARY KEY, body text)",
            "CREATE OR REPLACE VIEW listing_view AS SELECT * FROM listing_other.docs",
            "CREATE TABLE IF NOT EXISTS listing_parted (id int PRIMARY KEY, e halfvec(2)) PARTITION BY RANGE (id)",
            "CREATE TABLE IF NOT EXISTS listing_part_1 PARTITION OF listing_parted FOR VALUES FROM (0) TO (100)",
            "INSERT INTO listing_other.docs VALUES ('a', '[1,2]') ON CONFLICT DO NOTHING",
            "INSERT INTO listing_parted VALUES (1, '[1,2]') ON CONFLICT DO NOTHING",
        ):
            conn.execute(statement)
    listed = PgvectorConnector.list_collections(url=pgvector_server.url())
    mine = [name for name in listed if "listing" in name]
    assert mine == ["listing_other.docs", "listing_parted"]
    for name in mine:
        with PgvectorConnector(collection=name, url=pgvector_server.url()) as connector:
            assert connector.describe().count == 1
