"""Qdrant specifics the shared contract does not cover: what ``.vector`` is for Cosine collections in
each mode, scanning a store another process holds, read-only keys, failing closed, id ordering."""

from __future__ import annotations

import contextlib
import errno
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

qdrant_client = pytest.importorskip("qdrant_client")
qdrant_edge = pytest.importorskip("qdrant_edge")

from vdbguard.connectors import load_connector  # noqa: E402
from vdbguard.connectors.base import Connector  # noqa: E402
from vdbguard.connectors.qdrant import QdrantConnector  # noqa: E402
from vdbguard.connectors.qdrant_edge import QdrantEdgeConnector  # noqa: E402
from vdbguard.connectors.support import copy_tree_sparse  # noqa: E402

from tests.connectors.contract.backend_qdrant import API_KEY, READ_ONLY_API_KEY  # noqa: E402
from tests.connectors.contract.harness import sparse_tree_marker  # noqa: E402
from tests.connectors.doubles.qdrant_rest import QdrantRestDouble  # noqa: E402
from vdbguard.errors import ConnectorError, PartialWriteError, RecordError, VdbguardError  # noqa: E402
from vdbguard.records import VectorRecord  # noqa: E402

DIM = 8


def records(n: int, seed: int, *, ids: list[str] | None = None) -> list[VectorRecord]:
    rng = np.random.default_rng(seed)
    ids = ids or [str(uuid.UUID(int=int(rng.integers(1, 2**62)))) for _ in range(n)]
    return [
        VectorRecord(id=i, vector=(rng.standard_normal(DIM) * 3).astype(np.float32), payload={"n": k}, text=f"doc {k}")
        for k, i in enumerate(ids)
    ]


def read(connector: Connector, batch_size: int = 4, resume_from: str | None = None) -> list[VectorRecord]:
    return [r for b in connector.iter_batches(batch_size=batch_size, resume_from=resume_from) for r in b.records]


@pytest.fixture(scope="module")
def server() -> Iterator[QdrantRestDouble]:
    double = QdrantRestDouble(api_key=API_KEY, read_only_api_key=READ_ONLY_API_KEY)
    double.start()
    yield double
    double.stop()


Factory = Callable[..., Connector]


@pytest.fixture(params=["local", "remote", "edge"])
def factory(request: pytest.FixtureRequest, tmp_path: Path, server: QdrantRestDouble) -> Factory:
    def make(collection: str, **options: Any) -> Connector:
        if request.param == "local":
            return QdrantConnector(collection=collection, path=tmp_path / "store", **options)
        if request.param == "remote":
            return QdrantConnector(collection=collection, url=server.url, api_key=API_KEY, **options)
        return QdrantEdgeConnector(collection=collection, path=tmp_path / "shards", **options)

    make.mode = request.param  # type: ignore[attr-defined]
    return make


def fresh() -> str:
    return f"x{uuid.uuid4().hex[:10]}"


def test_registered_under_entry_points() -> None:
    assert load_connector("qdrant") is QdrantConnector
    assert load_connector("qdrant-edge") is QdrantEdgeConnector
    assert QdrantConnector.extra == QdrantEdgeConnector.extra == "qdrant"


# -- what .vector is for Cosine collections -------------------------------------------------------


def test_cosine_vectors_per_mode(factory: Factory) -> None:
    """Server and Edge keep only L2-normalised Cosine vectors; local mode's file keeps them as written."""
    name, written = fresh(), records(9, seed=1)
    with factory(name) as connector:
        connector.ensure_collection(DIM, "cosine")
        connector.upsert(written)
    with factory(name) as connector:
        info = connector.describe()
        got = {r.id: r.vector for r in read(connector)}
    assert info.metric == "cosine"
    normalised = factory.mode in ("remote", "edge")  # type: ignore[attr-defined]
    assert info.extra["vectors_normalised"] is normalised
    for record in written:
        vector = got[record.id]
        assert vector is not None and vector.dtype == np.float32
        if normalised:
            unit = record.vector / np.linalg.norm(record.vector)
            np.testing.assert_allclose(vector, unit, rtol=1e-6, atol=1e-6)
            assert abs(float(np.linalg.norm(vector)) - 1) < 1e-6
        else:
            assert np.array_equal(vector, record.vector)


def test_live_local_client_normalises_but_the_file_keeps_raw_vectors(tmp_path: Path) -> None:
    """The measured local-mode caveat behind ``vectors_normalised=False``."""
    store, raw = tmp_path / "store", np.array([3.0, 4.0, 0.0, 0.0], dtype=np.float32)
    client = qdrant_client.QdrantClient(path=str(store))
    client.create_collection("c", vectors_config=qdrant_client.models.VectorParams(size=4, distance="Cosine"))
    client.upsert("c", [qdrant_client.models.PointStruct(id=1, vector=raw.tolist())])
    live = np.asarray(client.scroll("c", with_vectors=True)[0][0].vector, dtype=np.float32)
    client.close()
    np.testing.assert_allclose(live, [0.6, 0.8, 0.0, 0.0], rtol=1e-6)
    with QdrantConnector(collection="c", path=store) as connector:
        assert np.array_equal(read(connector)[0].vector, raw)


# -- scanning a store an application holds ---------------------------------------------------------


def test_local_scan_while_another_client_holds_the_store(tmp_path: Path) -> None:
    store, written = tmp_path / "store", records(7, seed=2)
    with QdrantConnector(collection="c", path=store) as connector:
        connector.ensure_collection(DIM, "l2")
        connector.upsert(written)
    application = qdrant_client.QdrantClient(path=str(store))  # holds local mode's exclusive lock
    try:
        before = sparse_tree_marker(store)
        with QdrantConnector(collection="c", path=store) as connector:
            assert sorted(r.id for r in read(connector)) == sorted(r.id for r in written)
        assert sparse_tree_marker(store) == before
        with (
            pytest.raises(ConnectorError, match="held by another process"),
            QdrantConnector(collection="c", path=store, snapshot="false") as connector,
        ):
            connector.describe()
    finally:
        application.close()


def test_edge_scan_while_another_process_holds_the_shard(tmp_path: Path) -> None:
    written = records(7, seed=3)
    with QdrantEdgeConnector(collection="c", path=tmp_path) as connector:
        connector.ensure_collection(DIM, "l2")
        connector.upsert(written)
    application = qdrant_edge.EdgeShard.load(str(tmp_path / "c"))  # holds the WAL lock
    try:
        before = sparse_tree_marker(tmp_path / "c")
        with QdrantEdgeConnector(collection="c", path=tmp_path) as connector:
            assert sorted(r.id for r in read(connector)) == sorted(r.id for r in written)
        assert sparse_tree_marker(tmp_path / "c") == before
        with (
            pytest.raises(ConnectorError, match="held by another process"),
            QdrantEdgeConnector(collection="c", path=tmp_path, snapshot=False) as connector,
        ):
            connector.describe()
    finally:
        application.close()


def test_edge_path_may_name_the_shard_itself(tmp_path: Path) -> None:
    with QdrantEdgeConnector(collection="tickets", path=tmp_path) as connector:
        connector.ensure_collection(DIM, "ip")
        connector.upsert(records(3, seed=4))
    with QdrantEdgeConnector(collection="tickets", path=tmp_path / "tickets") as connector:
        info = connector.describe()
    assert (info.count, info.metric, info.dimension) == (3, "ip", DIM)
    with (
        pytest.raises(VdbguardError, match="existing shards: tickets"),
        QdrantEdgeConnector(collection="other", path=tmp_path / "tickets") as connector,
    ):
        connector.describe()


@pytest.mark.parametrize("in_kernel", [True, False], ids=["copy_file_range", "without it"])
def test_sparse_copy_keeps_holes_and_bytes(tmp_path: Path, in_kernel: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not in_kernel:  # as on a kernel or file system without copy_file_range
        monkeypatch.setattr(os, "copy_file_range", _refuse, raising=False)
    source = tmp_path / "src"
    source.mkdir()
    with open(source / "wal", "wb") as file:
        file.truncate(64 << 20)
        file.seek(5 << 20)
        file.write(b"written")
        file.seek(40 << 20)
        file.write(os.urandom(3 << 20))
    copy_tree_sparse(source, tmp_path / "dst")
    assert (tmp_path / "dst" / "wal").read_bytes() == (source / "wal").read_bytes()
    assert os.stat(tmp_path / "dst" / "wal").st_blocks * 512 < (5 << 20)


def _refuse(*args: object) -> int:
    raise OSError(errno.EXDEV, "Invalid cross-device link")


def test_sparse_copy_leaves_out_a_file_renamed_while_it_copies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A live shard's WAL renames its preallocated ``tmp-open-N`` segment between our listing and its copy."""
    source = tmp_path / "src"
    (source / "wal").mkdir(parents=True)
    (source / "wal" / "open-1").write_bytes(b"entries")
    (source / "wal" / "tmp-open-2").write_bytes(b"")
    listing = os.scandir

    def listed_then_renamed(path: str) -> contextlib.nullcontext[list[os.DirEntry[str]]]:
        with listing(path) as entries:
            found = list(entries)
        if Path(path) == source / "wal":
            (source / "wal" / "tmp-open-2").rename(source / "wal" / "open-2")
        return contextlib.nullcontext(found)

    monkeypatch.setattr(os, "scandir", listed_then_renamed)
    copy_tree_sparse(source, tmp_path / "dst")
    assert sorted(path.name for path in (tmp_path / "dst" / "wal").iterdir()) == ["open-1"]
    assert (tmp_path / "dst" / "wal" / "open-1").read_bytes() == b"entries"


# -- server specifics ------------------------------------------------------------------------------


def test_read_only_key_scans_but_cannot_write(server: QdrantRestDouble) -> None:
    name, written = fresh(), records(5, seed=5)
    with QdrantConnector(collection=name, url=server.url, api_key=API_KEY) as connector:
        connector.ensure_collection(DIM, "l2")
        connector.upsert(written)
    with QdrantConnector(collection=name, url=server.url, api_key=READ_ONLY_API_KEY) as connector:
        assert len(read(connector)) == 5
        with pytest.raises(ConnectorError) as error:
            connector.upsert(written[:1])
    assert "api key" in str(error.value).lower() and READ_ONLY_API_KEY not in str(error.value)


def test_api_key_from_environment(server: QdrantRestDouble, monkeypatch: pytest.MonkeyPatch) -> None:
    name = fresh()
    monkeypatch.setenv("QDRANT_API_KEY", API_KEY)
    with QdrantConnector(collection=name, url=server.url.removeprefix("http://")) as connector:
        connector.ensure_collection(DIM, "ip")
        assert connector.describe().metric == "ip"


def test_missing_key_is_a_credentials_error(server: QdrantRestDouble, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QDRANT_API_KEY", raising=False)
    with (
        pytest.raises(ConnectorError, match="credentials"),
        QdrantConnector(collection="any", url=server.url) as connector,
    ):
        connector.describe()


# -- writes ----------------------------------------------------------------------------------------


def test_upsert_fails_closed(factory: Factory) -> None:
    name, good = fresh(), records(4, seed=6)
    with factory(name) as connector:
        connector.ensure_collection(DIM, "l2")
        nan = VectorRecord(id=str(uuid.uuid4()), vector=np.full(DIM, np.nan, dtype=np.float32))
        with pytest.raises(RecordError, match="NaN"):
            connector.upsert([*good, nan])
        with pytest.raises(RecordError, match="unsigned integer nor a UUID"):
            connector.upsert([*good, VectorRecord(id="ticket-17", vector=good[0].vector)])
        short = VectorRecord(id="7", vector=good[0].vector[:3])
        with pytest.raises(RecordError, match="dimension"):
            connector.upsert([*good, short])
        assert connector.describe().count == 0


def test_a_write_that_fails_part_way_says_which_ids_landed(server: QdrantRestDouble) -> None:
    """600 records go in 3 requests; the second fails for good: the error lists the 256 of the first."""
    batch = records(600, seed=8)

    def upsert(name: str) -> int:
        with QdrantConnector(collection=name, url=server.url, api_key=API_KEY) as connector:
            connector.ensure_collection(DIM, "l2")
            before = server.requests
            connector.upsert(batch)
            return server.requests - before

    requests = upsert(fresh())  # the same calls, counted on a clean run: the three writes come last
    name = fresh()
    with QdrantConnector(collection=name, url=server.url, api_key=API_KEY) as connector:
        connector.ensure_collection(DIM, "l2")
        with server.faults.failing(times=100, after=requests - 2), pytest.raises(PartialWriteError) as failed:
            connector.upsert(batch)
    assert failed.value.written == tuple(r.id for r in batch[:256])
    assert "256 of 600 records were already changed" in failed.value.message and "rerun" in (failed.value.hint or "")
    with QdrantConnector(collection=name, url=server.url, api_key=API_KEY) as connector:
        landed = {r.id for b in connector.iter_batches(batch_size=500) for r in b.records}
    assert landed == set(failed.value.written)


def test_named_vectors_and_vector_name(factory: Factory) -> None:
    name, rng = fresh(), np.random.default_rng(7)
    with factory(name) as connector:
        connector.ensure_collection(DIM, "l2", vector_names=("body", "title"))
        title = rng.standard_normal(DIM).astype(np.float32)
        body = rng.standard_normal(DIM).astype(np.float32)
        connector.upsert([VectorRecord(id="1", vector=body, named_vectors={"title": title})])
        assert connector.describe().extra["vector_name"] == "body", "default: the alphabetically first"
        with pytest.raises(RecordError, match="differs from named_vectors"):
            connector.upsert([VectorRecord(id="2", vector=body, named_vectors={"body": title})])
    with factory(name, vector_name="title") as connector:
        (record,) = read(connector)
        assert np.array_equal(record.vector, title) and set(record.named_vectors) == {"body", "title"}
        assert connector.describe().extra["vector_name"] == "title"
    with (
        pytest.raises(ConnectorError, match="no dense vector named 'nope'"),
        factory(name, vector_name="nope") as connector,
    ):
        connector.describe()


def test_ids_in_qdrant_order_and_resume_across_integer_and_uuid_ids(factory: Factory) -> None:
    ids = ["30", "2", "1000", str(uuid.UUID(int=5)), str(uuid.UUID(int=2**120)), "0", str(uuid.UUID(int=1))]
    name = fresh()
    with factory(name) as connector:
        connector.ensure_collection(DIM, "l2")
        connector.upsert(records(len(ids), seed=8, ids=ids))
    expected = ["0", "2", "30", "1000", str(uuid.UUID(int=1)), str(uuid.UUID(int=5)), str(uuid.UUID(int=2**120))]
    with factory(name) as connector:
        batches = list(connector.iter_batches(batch_size=2))
    assert [r.id for b in batches for r in b.records] == expected
    for k, batch in enumerate(batches):
        with factory(name) as connector:
            rest = [r.id for r in read(connector, batch_size=3, resume_from=batch.cursor)]
        assert rest == expected[2 * (k + 1) :]


def test_text_goes_to_the_payload_and_text_stays_none(factory: Factory) -> None:
    name = fresh()
    with factory(name) as connector:
        connector.ensure_collection(DIM, "l2")
        connector.upsert(records(1, seed=9, ids=["1"]))
        (record,) = read(connector)
    assert record.text is None and record.payload == {"n": 0, "text": "doc 0"}


@pytest.mark.parametrize("cursor", ["offset:3", '{"next": true}', '{"next": "not-a-uuid"}', "{}"])
def test_bad_cursor(factory: Factory, cursor: str) -> None:
    with pytest.raises(VdbguardError, match="cursor"), factory("whatever") as connector:
        list(connector.iter_batches(resume_from=cursor))


def test_memory_location_and_bad_options_are_refused(tmp_path: Path) -> None:
    with pytest.raises(VdbguardError, match="exactly one"):
        QdrantConnector(collection="c")
    with pytest.raises(VdbguardError, match="memory"):
        QdrantConnector(collection="c", path=":memory:")
    with pytest.raises(VdbguardError, match="boolean"):
        QdrantConnector(collection="c", path=tmp_path, snapshot="maybe")
    with pytest.raises(ConnectorError, match=r"meta\.json"), QdrantConnector(collection="c", path=tmp_path) as c:
        c.describe()
    assert list(tmp_path.iterdir()) == [], "a scan must not create a store"
