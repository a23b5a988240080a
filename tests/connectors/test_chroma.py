"""The Chroma connector against real Chroma: an embedded store and a `chroma run` server."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

chromadb = pytest.importorskip("chromadb")

from vdbguard.connectors import load_connector  # noqa: E402
from vdbguard.connectors.chroma import ChromaConnector  # noqa: E402

from tests.helpers import free_port, make_chroma_store, make_records  # noqa: E402
from vdbguard.errors import (  # noqa: E402
    CollectionNotFoundError,
    ConnectorError,
    RecordError,
    VdbguardError,
)
from vdbguard.records import VectorRecord  # noqa: E402


@dataclass
class Backend:
    mode: str
    location: dict[str, Any]
    make_store: Callable[..., list[VectorRecord]]
    raw_client: Callable[[], Any]

    def open(self, collection: str, **options: Any) -> ChromaConnector:
        return ChromaConnector(collection=collection, **self.location, **options)

    def empty_collection(self, collection: str) -> None:
        client = self.raw_client()
        client.create_collection(collection, embedding_function=None)
        client.close()


@pytest.fixture(params=["embedded", "server"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "embedded":
        path = tmp_path / "store"

        def make_embedded(collection: str, n: int, dim: int, seed: int, metric: str = "l2") -> list:
            return make_chroma_store(path, collection, n, dim, seed, metric=metric)

        return Backend("embedded", {"path": path}, make_embedded, lambda: chromadb.PersistentClient(str(path)))

    url: str = request.getfixturevalue("chroma_server")
    port = int(url.rsplit(":", 1)[1])

    def make_served(collection: str, n: int, dim: int, seed: int, metric: str = "l2") -> list:
        records = make_records(n, dim, seed, collection=collection)
        with ChromaConnector(collection=collection, url=url, create=True, metric=metric) as connector:
            connector.upsert(records)
        return records

    return Backend("server", {"url": url}, make_served, lambda: chromadb.HttpClient(host="127.0.0.1", port=port))


@pytest.fixture
def name() -> str:
    """A collection name unique across the session (the server is shared between tests)."""
    return f"col-{uuid.uuid4().hex[:12]}"


def read_all(connector: ChromaConnector, batch_size: int = 256, resume_from: str | None = None) -> list:
    return [r for batch in connector.iter_batches(batch_size, resume_from) for r in batch.records]


def checksums(root: Path) -> dict[str, str]:
    return {
        str(f.relative_to(root)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(root.rglob("*"))
        if f.is_file()
    }


# -- reading ---------------------------------------------------------------------------------------


def test_registered_under_entry_point() -> None:
    assert load_connector("chroma") is ChromaConnector
    assert ChromaConnector.name == "chroma" and ChromaConnector.extra == "chroma"


def test_full_iteration_returns_every_record_exactly(backend: Backend, name: str) -> None:
    written = backend.make_store(name, 120, 16, seed=1)
    with backend.open(name) as connector:
        got = read_all(connector, batch_size=32)
    assert sorted(r.id for r in got) == sorted(r.id for r in written)
    assert len({r.id for r in got}) == len(got)
    by_id = {r.id: r for r in got}
    for record in written:
        read = by_id[record.id]
        assert read.vector is not None and read.vector.dtype == np.float32
        assert np.array_equal(read.vector, record.vector)
        assert read.payload == record.payload
        assert read.text == record.text
        assert read.collection == name


def test_empty_payload_and_missing_document_round_trip(backend: Backend, name: str) -> None:
    records = [
        VectorRecord("bare", np.arange(4, dtype=np.float32)),
        VectorRecord("meta-only", np.ones(4, dtype=np.float32), {"k": "v", "n": 3, "f": 0.5, "b": True}),
        VectorRecord("doc-only", np.full(4, -2.5, dtype=np.float32), text="just text"),
    ]
    with backend.open(name, create=True) as connector:
        connector.upsert(records)
        got = {r.id: r for r in read_all(connector)}
    for record in records:
        assert np.array_equal(got[record.id].vector, record.vector)
        assert got[record.id].payload == record.payload
        assert got[record.id].text == record.text


def test_page_size_respected_and_final_cursor_resumes_to_nothing(backend: Backend, name: str) -> None:
    backend.make_store(name, 50, 8, seed=2)
    with backend.open(name) as connector:
        batches = list(connector.iter_batches(batch_size=7))
        assert [len(b.records) for b in batches] == [7] * 7 + [1]
        assert all(b.cursor for b in batches)
        assert read_all(connector, 7, batches[-1].cursor) == []
        exact = list(connector.iter_batches(batch_size=10))  # page boundary on the last record
        assert [len(b.records) for b in exact] == [10] * 5
        assert read_all(connector, 10, exact[-1].cursor) == []
        assert [len(b.records) for b in connector.iter_batches(batch_size=500)] == [50]


def test_resume_from_every_cursor(backend: Backend, name: str) -> None:
    backend.make_store(name, 60, 8, seed=3)
    with backend.open(name) as connector:
        batches = list(connector.iter_batches(batch_size=9))
        order = [r.id for b in batches for r in b.records]
        seen = 0
        for batch in batches:
            seen += len(batch.records)
            assert batch.cursor is not None
            assert [r.id for r in read_all(connector, 9, batch.cursor)] == order[seen:]
            with backend.open(name) as fresh:  # a new instance (as after a restart) resumes the same way
                assert [r.id for r in read_all(fresh, 9, batch.cursor)] == order[seen:]


def test_resume_mid_iteration_with_different_batch_size(backend: Backend, name: str) -> None:
    written = backend.make_store(name, 40, 8, seed=4)
    with backend.open(name) as connector:
        iterator = connector.iter_batches(batch_size=6)
        first = [next(iterator), next(iterator)]
        iterator.close()
        cursor = first[-1].cursor
    with backend.open(name) as connector:
        rest = read_all(connector, 11, cursor)
    ids = [r.id for b in first for r in b.records] + [r.id for r in rest]
    assert sorted(ids) == sorted(r.id for r in written)


def test_describe(backend: Backend, name: str) -> None:
    backend.make_store(name, 30, 24, seed=5, metric="cosine")
    with backend.open(name) as connector:
        info = connector.describe()
    assert info.name == name
    assert info.count == 30
    assert info.dimension == 24
    assert info.metric == "cosine"
    assert info.vector_names == ()


def test_describe_default_metric_is_l2(backend: Backend, name: str) -> None:
    backend.make_store(name, 5, 8, seed=6)
    with backend.open(name) as connector:
        assert connector.describe().metric == "l2"


def test_empty_collection(backend: Backend, name: str) -> None:
    backend.empty_collection(name)
    with backend.open(name) as connector:
        assert list(connector.iter_batches(batch_size=10)) == []
        info = connector.describe()
    assert (info.count, info.dimension, info.metric) == (0, None, "l2")


def test_missing_collection(backend: Backend, name: str) -> None:
    backend.make_store(name, 3, 4, seed=7)
    with backend.open("no-such-collection") as connector, pytest.raises(CollectionNotFoundError) as err:
        connector.describe()
    assert "no-such-collection" in err.value.message
    assert err.value.hint is not None and name in err.value.hint
    with backend.open("no-such-collection") as connector, pytest.raises(CollectionNotFoundError):
        next(connector.iter_batches())


def test_upsert_into_missing_collection_needs_create(backend: Backend, name: str) -> None:
    backend.make_store(name, 3, 4, seed=8)
    with backend.open("not-there-yet") as connector, pytest.raises(CollectionNotFoundError):
        connector.upsert(make_records(2, 4, seed=9))


@pytest.mark.parametrize("cursor", ["", "offset:", "offset:-1", "offset:1x", "page:3", "12"])
def test_bad_cursor(backend: Backend, name: str, cursor: str) -> None:
    backend.make_store(name, 3, 4, seed=10)
    with backend.open(name) as connector, pytest.raises(VdbguardError) as err:
        next(connector.iter_batches(resume_from=cursor))
    assert repr(cursor) in str(err.value)


def test_nan_or_missing_vectors_are_refused_before_reaching_chroma(backend: Backend, name: str) -> None:
    # Chroma 1.5.9 itself refuses non-finite embeddings, and a record without an embedding would make
    # it run (download) its default embedding function; the connector refuses both up front.
    written = backend.make_store(name, 5, 4, seed=11)
    with backend.open(name) as connector:
        with pytest.raises(RecordError, match="NaN"):
            connector.upsert([VectorRecord("nan", np.array([np.nan, 1, 2, 3], dtype=np.float32))])
        with pytest.raises(RecordError, match="missing"):
            connector.upsert([VectorRecord("none", None, text="no vector")])
        assert sorted(r.id for r in read_all(connector)) == sorted(r.id for r in written)


def test_chroma_rejects_nan_embeddings(tmp_path: Path) -> None:
    # Why no NaN vector can be read back: Chroma refuses to store it.
    client = chromadb.PersistentClient(str(tmp_path / "raw"))
    collection = client.create_collection("nan-test", embedding_function=None)
    with pytest.raises(Exception, match=r"(?i)nan|finite"):
        collection.upsert(ids=["a"], embeddings=[[float("nan"), 0.0]])
    client.close()


def test_upsert_updates_existing_ids_and_later_reads_see_writes(backend: Backend, name: str) -> None:
    written = backend.make_store(name, 10, 4, seed=12)
    with backend.open(name) as connector:
        assert connector.describe().count == 10  # takes the snapshot in embedded mode
        changed = VectorRecord(written[0].id, np.full(4, 7.0, dtype=np.float32), {"new": 1}, "changed")
        connector.upsert([changed, *make_records(3, 4, seed=13)])
        assert connector.describe().count == 13
        got = {r.id: r for r in read_all(connector)}
    assert np.array_equal(got[changed.id].vector, changed.vector)
    assert got[changed.id].payload == {"new": 1} and got[changed.id].text == "changed"


def test_upsert_replaces_payload_and_document_entirely(backend: Backend, name: str) -> None:
    # Chroma's upsert alone would merge metadata and keep the old document (a masking hook that drops
    # a PII key or document must not leave it behind).
    written = backend.make_store(name, 4, 4, seed=18)
    a, b, c = written[0], written[1], written[2]
    replaced = [
        VectorRecord(a.id, a.vector, {"idx": 0}, a.text),  # fewer keys
        VectorRecord(b.id, b.vector, {}, "new text"),  # no payload at all
        VectorRecord(c.id, c.vector, {"group": "x"}, None),  # document removed
    ]
    with backend.open(name) as connector:
        connector.upsert(replaced)
    with backend.open(name) as connector:
        got = {r.id: r for r in read_all(connector)}
    assert len(got) == 4
    for record in replaced:
        assert got[record.id].payload == record.payload
        assert got[record.id].text == record.text
        assert np.array_equal(got[record.id].vector, record.vector)
    assert got[written[3].id].payload == written[3].payload


# -- configuration and connection errors -----------------------------------------------------------


def test_exactly_one_of_path_or_url(tmp_path: Path) -> None:
    with pytest.raises(VdbguardError, match="exactly one") as err:
        ChromaConnector(collection="docs")
    assert err.value.hint
    with pytest.raises(VdbguardError, match="exactly one"):
        ChromaConnector(collection="docs", path=tmp_path, url="http://127.0.0.1:8000")


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ConnectorError, match="does not exist"):
        ChromaConnector(collection="docs", path=tmp_path / "nowhere")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConnectorError, match="not a directory"):
        ChromaConnector(collection="docs", path=tmp_path / "file")


def test_unreachable_server_fails_fast_without_leaking_headers() -> None:
    port = free_port()
    connector = ChromaConnector(
        collection="docs", url=f"http://user:pw@127.0.0.1:{port}", headers={"x-chroma-token": "s3cr3t-tok"}
    )
    start = time.monotonic()
    with pytest.raises(ConnectorError) as err:
        connector.describe()
    assert time.monotonic() - start < 15
    message = str(err.value)
    assert f"http://127.0.0.1:{port}" in message
    assert err.value.hint is not None and "chroma run" in err.value.hint
    assert "s3cr3t" not in message and "pw@" not in message
    connector.close()


@pytest.mark.parametrize("url", ["ftp://host:1", "http://", "http://host:99999", "http://host:1/api"])
def test_bad_url(url: str) -> None:
    with pytest.raises(VdbguardError):
        ChromaConnector(collection="docs", url=url)


def test_bad_url_error_hides_credentials() -> None:
    with pytest.raises(VdbguardError) as err:
        ChromaConnector(collection="docs", url="http://admin:hunter2@host:1/api")
    assert "hunter2" not in str(err.value)


# -- the read-only guarantee -----------------------------------------------------------------------


def test_scan_leaves_embedded_store_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / "store"
    written = make_chroma_store(path, "docs", 300, 32, seed=14)
    make_chroma_store(path, "other", 20, 8, seed=15)
    before = checksums(path)
    assert before, "the store should contain files"
    with ChromaConnector(collection="docs", path=path) as connector:
        info = connector.describe()
        got = read_all(connector, batch_size=64)
        snapshot_dir = connector._store.snapshot_dir
        assert snapshot_dir is not None and path not in snapshot_dir.parents
    assert info.count == 300 and len(got) == len(written)
    with ChromaConnector(collection="docs", path=path) as connector:  # resume in a new instance, too
        read_all(connector, batch_size=64, resume_from="offset:128")
    assert checksums(path) == before
    assert not snapshot_dir.exists(), "close() removes the snapshot copy"


def test_the_private_copy_leaves_other_collections_indexes_behind(tmp_path: Path) -> None:
    path = tmp_path / "store"
    written = make_chroma_store(path, "docs", 300, 32, seed=18)
    make_chroma_store(path, "other", 1200, 8, seed=19)
    indexes = {p.name for p in path.iterdir() if p.is_dir()}
    assert len(indexes) == 2, "each collection keeps its vectors in a folder of its own"
    with ChromaConnector(collection="docs", path=path) as connector:
        got = {r.id: r.vector for r in read_all(connector, batch_size=64)}
        assert connector._store.snapshot_dir is not None
        copied = {p.name for p in connector._store.snapshot_dir.iterdir() if p.is_dir()}
    assert len(copied) == 1 and copied < indexes
    assert got.keys() == {r.id for r in written}
    for record in written:
        np.testing.assert_array_equal(got[record.id], record.vector)
    with ChromaConnector(collection="other", path=path) as connector:
        assert len(read_all(connector, batch_size=500)) == 1200


def test_raw_persistent_client_read_modifies_store(tmp_path: Path) -> None:
    """Documents why the connector snapshots by default (informational: chromadb behaviour may change).

    Observed with chromadb 1.5.9: opening a PersistentClient and reading a collection inserts a row
    into the ``acquire_write`` table of chroma.sqlite3 and rewrites the HNSW segment's
    ``data_level0.bin`` and ``length.bin``, on every open, even for read-only calls.
    """
    path = tmp_path / "store"
    make_chroma_store(path, "docs", 50, 8, seed=16)
    before = checksums(path)
    client = chromadb.PersistentClient(str(path))
    client.get_collection("docs", embedding_function=None).get(limit=10, include=["embeddings"])
    client.close()
    after = checksums(path)
    changed = sorted(k for k in before if before[k] != after.get(k))
    print(f"raw chromadb {chromadb.__version__} read changed: {changed}")
    if not changed:
        pytest.skip(f"chromadb {chromadb.__version__} no longer modifies the store on read")


def test_snapshot_false_reads_in_place(tmp_path: Path) -> None:
    path = tmp_path / "store"
    written = make_chroma_store(path, "docs", 20, 8, seed=17)
    with ChromaConnector(collection="docs", path=path, snapshot=False) as connector:
        assert sorted(r.id for r in read_all(connector, 8)) == sorted(r.id for r in written)
        assert connector._store.snapshot_dir is None


def test_the_content_version_changes_with_every_write_to_the_collection_and_only_then(tmp_path: Path) -> None:
    path = tmp_path / "store"
    records = make_chroma_store(path, "notes", 20, 8, seed=1)
    make_chroma_store(path, "other", 20, 8, seed=2)

    def version(collection: str = "notes") -> str | None:
        with ChromaConnector(collection=collection, path=path) as connector:
            return connector.content_version()

    before = version()
    assert before is not None and version() == before and version("other") != before
    with ChromaConnector(collection="notes", path=path, snapshot=False) as connector:
        read_all(connector)  # a read in place touches the store's files, and writes nothing
    assert version() == before

    with ChromaConnector(collection="other", path=path) as connector:
        connector.upsert([VectorRecord(id="x", vector=np.ones(8, np.float32))])
    assert version() == before, "a write to another collection"

    versions = {before}
    for change in ("upsert", "delete", "remake"):
        with ChromaConnector(collection="notes", path=path) as connector:
            if change == "upsert":
                connector.upsert(records[:1])  # the same record written again is still a write
            elif change == "delete":
                connector.delete([records[0].id])
        if change == "remake":
            client = chromadb.PersistentClient(path=str(path))
            client.delete_collection("notes")
            del client
            make_chroma_store(path, "notes", 20, 8, seed=1)
        assert version() not in versions, change
        versions.add(version())

    with ChromaConnector(collection="notes", url="http://127.0.0.1:9") as server:
        assert server.content_version() is None, "a server names no version: every re-scan reads"
