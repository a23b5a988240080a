"""Ids of the types a store allows are read whole, paged in order and resumed exactly: PostgreSQL integer,
bigint, uuid and text keys (a real server)."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

DIM = 4
KEYS: dict[str, list[Any]] = {
    "integer": [-5, 0, 7, 2_147_483_647],
    "bigint": [-(2**63), 1, 2**53 + 1, 2**63 - 1],  # past float precision: an id read as a float would collide
    "uuid": [uuid.UUID(int=i) for i in (1, 2**64, 2**127, 2**128 - 1)],
    "text": ["", "Ä-ümlaut", "id with spaces", "9"],  # "9" sorts after the others as text, not as a number
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.connectors.contract.backend_pgvector import PgvectorServer

    server = PgvectorServer(tmp_path_factory.mktemp("pg"))
    try:
        server.start()
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"no PostgreSQL server with pgvector here: {str(exc)[:200]}")
    yield server
    server.stop()


@pytest.mark.parametrize("key_type", list(KEYS))
def test_pgvector_keys_of_every_type_are_read_once_and_resume_exactly(server: Any, key_type: str, tmp_path: Path):
    import psycopg
    from vdbguard.connectors.pgvector import PgvectorConnector

    table = f"keys_{key_type}"
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id {key_type} PRIMARY KEY, embedding vector({DIM}))")
        for i, key in enumerate(KEYS[key_type]):
            conn.execute(f"INSERT INTO {table} VALUES (%s, %s)", (key, f"[{i + 1},1,1,1]"))
    expected = sorted(str(key) for key in KEYS[key_type])
    with PgvectorConnector(collection=table, url=server.url()) as connector:
        batches = list(connector.iter_batches(batch_size=1))
        ids = [r.id for b in batches for r in b.records]
        assert sorted(ids) == expected and len(ids) == len(set(ids))
        vectors = {r.id: r.vector for b in batches for r in b.records}
        for i, key in enumerate(KEYS[key_type]):
            np.testing.assert_array_equal(vectors[str(key)], np.array([i + 1, 1, 1, 1], np.float32))
    for cut in range(len(batches)):
        with PgvectorConnector(collection=table, url=server.url()) as resumed:
            pages = resumed.iter_batches(batch_size=3, resume_from=batches[cut].cursor)
            rest = [r.id for b in pages for r in b.records]
        assert ids[: cut + 1] + rest == ids, f"resuming after {ids[cut]!r}"
