"""Ids of the types a store allows are read whole, paged in order and resumed exactly: PostgreSQL integer,
bigint, uuid and text keys (a real server), LanceDB int64, int32 and string ids, Milvus Lite int64 and VARCHAR
primary keys, Pinecone's ASCII string ids (through its SDK and the REST double). Qdrant's integer and UUID ids
are paged in the engine's own order. Weaviate allows UUIDs only, which the contract suite
uses for every store. LanceDB, Milvus and Pinecone also delete such ids, quotes included."""

from __future__ import annotations

import uuid
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


@pytest.mark.parametrize("key_type", list(KEYS))
def test_pgvector_keys_of_every_type_are_read_once_and_resume_exactly(pgvector_server: Any, key_type: str) -> None:
    import psycopg
    from vdbguard.connectors.pgvector import PgvectorConnector

    table, url = f"keys_{key_type}", pgvector_server.url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id {key_type} PRIMARY KEY, embedding vector({DIM}))")
        for i, key in enumerate(KEYS[key_type]):
            conn.execute(f"INSERT INTO {table} VALUES (%s, %s)", (key, f"[{i + 1},1,1,1]"))
    expected = sorted(str(key) for key in KEYS[key_type])
    with PgvectorConnector(collection=table, url=url) as connector:
        batches = list(connector.iter_batches(batch_size=1))
        ids = [r.id for b in batches for r in b.records]
        assert sorted(ids) == expected and len(ids) == len(set(ids))
        vectors = {r.id: r.vector for b in batches for r in b.records}
        for i, key in enumerate(KEYS[key_type]):
            np.testing.assert_array_equal(vectors[str(key)], np.array([i + 1, 1, 1, 1], np.float32))
    for cut in range(len(batches)):
        with PgvectorConnector(collection=table, url=url) as resumed:
            pages = resumed.iter_batches(batch_size=3, resume_from=batches[cut].cursor)
            rest = [r.id for b in pages for r in b.records]
        assert ids[: cut + 1] + rest == ids, f"resuming after {ids[cut]!r}"


def _read_and_resume(make: Any, expected: list[str], vectors: dict[str, list[float]]) -> None:
    """Every id once, each vector bit for bit; a resume from every page's cursor continues exactly."""
    with make() as connector:
        batches = list(connector.iter_batches(batch_size=1))
    ids = [r.id for b in batches for r in b.records]
    assert sorted(ids) == sorted(expected) and len(ids) == len(set(ids))
    for record in (r for b in batches for r in b.records):
        np.testing.assert_array_equal(record.vector, np.array(vectors[record.id], np.float32))
    for cut in range(len(batches)):
        with make() as resumed:
            rest = [
                r.id for b in resumed.iter_batches(batch_size=3, resume_from=batches[cut].cursor) for r in b.records
            ]
        assert ids[: cut + 1] + rest == ids, f"resuming after {ids[cut]!r}"
    gone = [expected[0], expected[-1]]
    with make() as connector:  # quoted as the store's query language needs; an id never stored is ignored
        connector.delete([*gone, "never stored"])
        left = [r.id for b in connector.iter_batches(batch_size=2) for r in b.records]
    assert sorted(left) == sorted(set(expected) - set(gone))


LANCE_KEYS: dict[str, tuple[str, list[Any]]] = {
    "int64": ("int64", [-(2**63), 0, 2**53 + 1, 2**63 - 1]),
    "int32": ("int32", [-5, 0, 7, 2**31 - 1]),
    "string": ("string", ['O\'Brien "Jr" \\', "", "Ä-ümlaut", "id with spaces", "9"]),
}


@pytest.mark.parametrize("key_type", list(LANCE_KEYS))
def test_lancedb_keys_of_every_type_are_read_once_and_resume_exactly(key_type: str, tmp_path: Path) -> None:
    lancedb = pytest.importorskip("lancedb")
    import pyarrow as pa
    from vdbguard.connectors.lancedb import LanceDBConnector

    arrow_type, keys = LANCE_KEYS[key_type]
    vectors = [[float(i + 1), 1.0, 1.0, 1.0] for i in range(len(keys))]
    table = pa.table(
        {
            "id": pa.array(keys, type=getattr(pa, arrow_type)()),
            "vector": pa.array(vectors, type=pa.list_(pa.float32(), DIM)),
        }
    )
    lancedb.connect(tmp_path / "lance").create_table("keys", data=table)
    expected = [str(key) for key in keys]
    _read_and_resume(
        lambda: LanceDBConnector(collection="keys", path=tmp_path / "lance"),
        expected,
        dict(zip(expected, vectors, strict=True)),
    )


@pytest.mark.parametrize("key_type", ["int64", "varchar"])
def test_milvus_keys_of_every_type_are_read_once_and_resume_exactly(key_type: str, tmp_path: Path) -> None:
    pymilvus = pytest.importorskip("pymilvus")
    from vdbguard.connectors.milvus import MilvusConnector

    keys: list[Any] = (
        [-(2**63), 0, 2**53 + 1, 2**63 - 1]
        if key_type == "int64"
        else ['O\'Brien "Jr" \\', "a", "Ä-ümlaut", "id with spaces", "9"]
    )
    client = pymilvus.MilvusClient(str(tmp_path / "store.db"))
    schema = client.create_schema(auto_id=False)
    if key_type == "int64":
        schema.add_field("id", pymilvus.DataType.INT64, is_primary=True)
    else:
        schema.add_field("id", pymilvus.DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("vector", pymilvus.DataType.FLOAT_VECTOR, dim=DIM)
    index = client.prepare_index_params()
    index.add_index("vector", index_type="FLAT", metric_type="L2")
    client.create_collection("keys", schema=schema, index_params=index)
    vectors = [[float(i + 1), 1.0, 1.0, 1.0] for i in range(len(keys))]
    client.insert("keys", [{"id": key, "vector": vector} for key, vector in zip(keys, vectors, strict=True)])
    client.close()
    expected = [str(key) for key in keys]
    _read_and_resume(
        lambda: MilvusConnector(collection="keys", path=tmp_path / "store.db"),
        expected,
        dict(zip(expected, vectors, strict=True)),
    )


def test_pinecone_string_ids_of_any_shape_are_read_once_and_resume_exactly() -> None:
    """Pinecone ids are ASCII strings up to 512 characters (its SDK refuses others): the SDK against the double."""
    pytest.importorskip("pinecone")
    from vdbguard.connectors.pinecone import PineconeConnector

    from tests.connectors.doubles.pinecone_rest import PineconeDouble
    from vdbguard.records import VectorRecord

    keys = ['O\'Brien "Jr" \\', "id with spaces", "a/b?c=d&e#f%20", "9", "x" * 512, "10", "-", "tab\there"]
    vectors = [[float(i + 1), 1.0, 1.0, 1.0] for i in range(len(keys))]
    with PineconeDouble(api_key="pcsk-ids") as double:
        settings = {"collection": "keys", "url": double.url, "api_key": "pcsk-ids"}
        with PineconeConnector(**settings) as writer:
            writer.ensure_collection(DIM, "cosine")
            writer.upsert([VectorRecord(k, np.array(v, np.float32)) for k, v in zip(keys, vectors, strict=True)])
        _read_and_resume(lambda: PineconeConnector(**settings), keys, dict(zip(keys, vectors, strict=True)))


QDRANT_IDS = [
    str(i)
    for i in (0, 7, 2**53 + 1, 2**64 - 1)  # past float precision, and the largest id Qdrant allows
] + [str(uuid.UUID(int=i)) for i in (1, 2**64, 2**127, 2**128 - 1)]


@pytest.mark.parametrize("engine", ["local", "edge"])
def test_qdrant_integer_and_uuid_ids_are_paged_in_the_engines_order(engine: str, tmp_path: Path) -> None:
    """Pages come in the engine's id order (numbers, then UUIDs by value) in both: Qdrant Edge is Qdrant's own
    engine, local mode its Python re-implementation."""
    from vdbguard.connectors.qdrant import QdrantConnector
    from vdbguard.connectors.qdrant_edge import QdrantEdgeConnector

    from vdbguard.records import VectorRecord

    def make() -> Any:
        if engine == "edge":
            return QdrantEdgeConnector(collection="ids", path=str(tmp_path / "edge"))
        return QdrantConnector(collection="ids", path=str(tmp_path / "qdrant"))

    rng = np.random.default_rng(3)
    with make() as connector:
        connector.ensure_collection(DIM, "l2")
        connector.upsert([VectorRecord(i, rng.standard_normal(DIM).astype(np.float32)) for i in QDRANT_IDS[::-1]])
    with make() as connector:
        order = [r.id for b in connector.iter_batches(batch_size=3) for r in b.records]
    assert order == QDRANT_IDS
