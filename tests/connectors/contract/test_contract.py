"""The connector contract: every store, every mode, the same behaviour (see issue #3)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from vdbguard.connectors import load_connector

from tests.connectors.contract.harness import Backend, EmbeddedBackend, ids_of
from vdbguard.errors import CollectionNotFoundError, ConnectorError, VdbguardError
from vdbguard.records import PROTECTION_MARK_KEY, VectorRecord, record_digest

DIM = 16
ROOT = Path(__file__).resolve().parents[3]


def make_records(
    n: int, seed: int, *, named: tuple[str, ...] = (), namespaces: tuple[str, ...] = ()
) -> list[VectorRecord]:
    rng = np.random.default_rng(seed)
    records = []
    for i in range(n):
        vectors = {name: rng.standard_normal(DIM).astype(np.float32) for name in named}
        primary = vectors[named[0]] if named else rng.standard_normal(DIM).astype(np.float32)
        records.append(
            VectorRecord(
                id=str(uuid.UUID(int=int(rng.integers(1, 2**62)) * 2**64 + i)),
                vector=primary,
                payload={"i": i, "tag": f"t{i % 3}", "flag": bool(i % 2), "score": round(float(rng.random()), 4)},
                text=f"document number {i}",
                namespace=namespaces[i % len(namespaces)] if namespaces else None,
                named_vectors=vectors,
            )
        )
    return records


def fill(backend: Backend, collection: str, records: list[VectorRecord], named: tuple[str, ...] = ()) -> None:
    with backend.connector(collection) as connector:
        connector.ensure_collection(DIM, backend.metric, vector_names=named)
        connector.upsert(records)


_counter = iter(range(10**6))


def fresh_name(prefix: str = "c") -> str:
    return f"{prefix}{next(_counter)}x{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def standard(backend: Backend) -> tuple[str, list[VectorRecord]]:
    """137 records (namespaced when the store has namespaces), written once per backend."""
    namespaces = ("ns-a", "ns-b") if backend.namespaces else ()
    records = make_records(137, seed=7, namespaces=namespaces)
    name = fresh_name("std")
    fill(backend, name, records)
    return name, records


def read_all(backend: Backend, collection: str, batch_size: int = 25, resume_from: str | None = None) -> list:
    with backend.connector(collection) as connector:
        return list(connector.iter_batches(batch_size=batch_size, resume_from=resume_from))


def assert_same_vector(backend: Backend, got: np.ndarray | None, want: np.ndarray) -> None:
    assert got is not None
    assert got.dtype == np.float32
    if backend.exact_float32:
        assert np.array_equal(got, want), "vectors must come back bit for bit"
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_describe(backend: Backend, standard) -> None:
    name, records = standard
    with backend.connector(name) as connector:
        info = connector.describe()
    assert info.name == name
    assert info.dimension == DIM
    assert info.count == len(records)
    assert info.metric == backend.metric
    if backend.namespaces:
        assert set(info.namespaces) >= {"ns-a", "ns-b"}


def test_full_iteration_returns_every_record_once_exactly(backend: Backend, standard) -> None:
    name, records = standard
    batches = read_all(backend, name)
    got = {record.id: record for batch in batches for record in batch.records}
    assert len(ids_of(batches)) == len(records) == len(got)
    for want in records:
        record = got[want.id]
        assert_same_vector(backend, record.vector, want.vector)
        assert {k: record.payload[k] for k in want.payload} == want.payload
        if backend.namespaces:
            assert record.namespace == want.namespace


def test_page_size_is_respected(backend: Backend, standard) -> None:
    name, records = standard
    for size in (1, 10, 50, 500):
        if size == 1 and len(records) > 40:
            batches = []
            with backend.connector(name) as connector:
                for batch in connector.iter_batches(batch_size=1):
                    batches.append(batch)
                    if len(batches) == 40:
                        break
            assert all(len(b.records) == 1 for b in batches)
            continue
        batches = read_all(backend, name, batch_size=size)
        assert all(len(b.records) <= size for b in batches)
        assert sum(len(b.records) for b in batches) == len(records)


def test_resume_from_any_cursor(backend: Backend, standard) -> None:
    name, _ = standard
    batches = read_all(backend, name, batch_size=20)
    all_ids = ids_of(batches)
    seen = 0
    for batch in batches:
        seen += len(batch.records)
        rest = ids_of(read_all(backend, name, batch_size=20, resume_from=batch.cursor)) if batch.cursor else []
        assert all_ids[:seen] + rest == all_ids or sorted(all_ids[:seen] + rest) == sorted(all_ids)
        assert not set(all_ids[:seen]) & set(rest), "resuming must not repeat records"


def test_cursor_survives_a_process_restart(backend: Backend, standard) -> None:
    name, records = standard
    script = (
        "import json, sys\n"
        "from vdbguard.connectors import load_connector\n"
        "name, kwargs = json.loads(sys.argv[1])\n"
        "with load_connector(name)(**kwargs) as c:\n"
        "    it = c.iter_batches(batch_size=30)\n"
        "    batches = [next(it), next(it)]\n"
        "print(json.dumps([[r.id for b in batches for r in b.records], batches[-1].cursor]))\n"
    )
    arguments = json.dumps([backend.connector_name, backend.connector_kwargs(name)])
    result = subprocess.run(
        [sys.executable, "-c", script, arguments], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    first_ids, cursor = json.loads(result.stdout.strip().splitlines()[-1])
    rest = ids_of(read_all(backend, name, batch_size=30, resume_from=cursor))
    assert sorted(first_ids + rest) == sorted(r.id for r in records)


def test_empty_collection(backend: Backend) -> None:
    name = fresh_name("empty")
    with backend.connector(name) as connector:
        connector.ensure_collection(DIM, backend.metric)
        assert connector.describe().count == 0
        assert ids_of(list(connector.iter_batches(batch_size=10))) == []


def test_upsert_round_trip_replaces_vector_and_payload(backend: Backend) -> None:
    name = fresh_name("rt")
    records = make_records(12, seed=11, namespaces=("ns-a",) if backend.namespaces else ())
    fill(backend, name, records)
    changed = make_records(12, seed=12, namespaces=("ns-a",) if backend.namespaces else ())[0]
    replacement = VectorRecord(
        id=records[0].id,
        vector=changed.vector,
        payload={"i": 999, "tag": "new"},
        text="replaced",
        namespace=records[0].namespace,
    )
    with backend.connector(name) as connector:
        connector.upsert([replacement])
        got = {r.id: r for b in connector.iter_batches(batch_size=5) for r in b.records}
    assert len(got) == 12
    assert_same_vector(backend, got[records[0].id].vector, replacement.vector)
    assert got[records[0].id].payload.get("i") == 999 and got[records[0].id].payload.get("tag") == "new"
    assert "flag" not in got[records[0].id].payload, "upsert replaces the payload, it does not merge"


def test_the_protection_mark_comes_back_as_written_in_a_new_collection_and_in_place(backend: Backend) -> None:
    """protect writes a JSON string under a reserved payload key with each vector (what stops a later run from
    transforming the record again): a collection it creates keeps it, and so does an existing record rewritten in
    place, and both hand it back unchanged beside the rest of the payload."""
    records = make_records(4, seed=29, namespaces=("ns-a",) if backend.namespaces else ())
    mark = json.dumps([{"transform": "gaussian", "digest": "e33efdf1c1045d0e"}], separators=(",", ":"))
    marked = [dataclasses.replace(r, payload={**r.payload, PROTECTION_MARK_KEY: mark}) for r in records]
    created, rewritten = fresh_name("mark"), fresh_name("mark")
    fill(backend, created, marked)
    fill(backend, rewritten, records)
    with backend.connector(rewritten) as connector:
        connector.upsert(marked[:2])
    for name, expected in ((created, marked), (rewritten, marked[:2] + records[2:])):
        got = {r.id: r for page in read_all(backend, name) for r in page.records}
        assert {i: r.payload.get(PROTECTION_MARK_KEY) for i, r in got.items()} == {
            r.id: r.payload.get(PROTECTION_MARK_KEY) for r in expected
        }
        assert {i: r.payload.get("tag") for i, r in got.items()} == {r.id: r.payload["tag"] for r in expected}


def test_a_digest_changes_with_its_record_and_only_then(backend: Backend) -> None:
    """What a re-scan trusts: reading twice gives the same digests; a new vector, payload or text changes
    that record's digest and no other's, whether the store's pages are columns or records."""
    name = fresh_name("dig")
    records = make_records(6, seed=19, namespaces=("ns-a",) if backend.namespaces else ())
    fill(backend, name, records)

    def digests() -> dict[str, bytes]:
        with backend.connector(name) as connector:
            pages = list(connector.iter_batches(batch_size=4))
        found = {i: d for page in pages for i, d in zip(page.ids, page.digests(), strict=True)}
        if backend.connector_name != "lancedb":  # LanceDB's columns hash its Arrow row, not a record's JSON
            # a page that may come as columns or as records (a point without its vector) digests alike either way
            assert found == {r.id: record_digest(r) for page in pages for r in page.records}
        return found

    before = digests()
    assert digests() == before and len(set(before.values())) == 6
    first, second, third = records[:3]
    changed = [
        dataclasses.replace(first, vector=first.vector * 2 + 1),
        dataclasses.replace(second, payload={**second.payload, "tag": "new"}),
        dataclasses.replace(third, text="another text"),
    ]
    with backend.connector(name) as connector:
        connector.upsert(changed)
    after = digests()
    assert {i for i in before if after[i] != before[i]} == {first.id, second.id, third.id}


def test_a_content_version_stays_while_nothing_is_written_and_changes_with_any_write(backend: Backend) -> None:
    """What a re-scan that reads nothing trusts: a store that names a content version (``None``: it names none,
    and every re-scan reads) names the same one after reads, and another one after a write, even one that
    writes a record as it was."""
    name = fresh_name("ver")
    records = make_records(5, seed=23, namespaces=("ns-a",) if backend.namespaces else ())
    fill(backend, name, records)

    def version() -> str | None:
        with backend.connector(name) as connector:
            return connector.content_version()

    before = version()
    if before is None:
        assert version() is None
        return
    with backend.connector(name) as connector:
        read_all(backend, name)
        assert connector.content_version() == before
        connector.upsert(records[:1])
    assert version() != before


def test_delete_removes_exactly_the_given_ids(backend: Backend) -> None:
    name = fresh_name("del")
    records = make_records(9, seed=13, namespaces=("ns-a",) if backend.namespaces else ())
    fill(backend, name, records)
    with backend.connector(name) as connector:
        connector.delete([records[1].id, records[4].id, str(uuid.UUID(int=5))])  # the last one is not stored
        left = ids_of(list(connector.iter_batches(batch_size=4)))
        assert connector.describe().count == 7
    assert sorted(left) == sorted(r.id for i, r in enumerate(records) if i not in (1, 4))


def test_a_search_for_a_stored_vector_returns_that_vector(backend: Backend) -> None:
    """What ``audit`` asks a store: will a search hand back the hit's stored vector?"""
    name = fresh_name("query")
    records = make_records(6, seed=17, namespaces=("ns-a",) if backend.namespaces else ())
    fill(backend, name, records)
    with backend.connector(name) as connector:
        found = connector.query_vector(records[3].vector.tolist())
    assert found is not None
    got, want = np.asarray(found, dtype=np.float64), records[3].vector.astype(np.float64)
    # as the store keeps it: a cosine collection may keep it normalised
    assert float(got @ want / (np.linalg.norm(got) * np.linalg.norm(want))) > 0.9999


def test_named_vectors(backend: Backend) -> None:
    if not backend.named_vectors:
        pytest.skip(f"{backend.id} stores one vector per record")
    name = fresh_name("named")
    named = ("text", "title")
    records = make_records(15, seed=13, named=named)
    fill(backend, name, records, named=named)
    with backend.connector(name) as connector:
        assert set(connector.describe().vector_names) == set(named)
    with backend.connector(name, vector_name="title") as connector:
        got = {r.id: r for b in connector.iter_batches(batch_size=4) for r in b.records}
    for want in records:
        assert_same_vector(backend, got[want.id].vector, want.named_vectors["title"])
        for vector_name in named:
            assert_same_vector(backend, got[want.id].named_vectors[vector_name], want.named_vectors[vector_name])


def test_namespaces_are_enumerated_and_all_read(backend: Backend, standard) -> None:
    if not backend.namespaces:
        pytest.skip(f"{backend.id} has no namespaces")
    name, records = standard
    got = [r for b in read_all(backend, name, batch_size=40) for r in b.records]
    assert {r.namespace for r in got} == {"ns-a", "ns-b"}
    assert len(got) == len(records)


def test_a_scan_issues_no_write(backend: Backend, standard) -> None:
    name, _ = standard
    before = backend.write_marker()
    with backend.connector(name) as connector:
        connector.describe()
        for _ in connector.iter_batches(batch_size=33):
            pass
    assert backend.write_marker() == before


def test_missing_collection_is_a_clear_error(backend: Backend, standard) -> None:
    with pytest.raises(CollectionNotFoundError) as error, backend.connector("no_such_collection_xyz") as connector:
        connector.describe()
    assert "no_such_collection_xyz" in str(error.value)


def test_list_collections_names_every_collection_once_and_only_reads(backend: Backend, standard) -> None:
    """What ``scan --collection '*'`` expands: every collection of the store, sorted and each once, under a name
    that opens it; namespaces (tenants, partitions) stay inside their collection; listing writes nothing."""
    name, records = standard
    other, namespaces = fresh_name("lst"), ("ns-a", "ns-b") if backend.namespaces else ()
    fill(backend, other, make_records(4, seed=29, namespaces=namespaces))
    before = backend.write_marker()
    listed = load_connector(backend.connector_name).list_collections(**backend.store_kwargs())
    assert backend.write_marker() == before
    assert listed == sorted(set(listed))
    assert {backend.listed_name(name), backend.listed_name(other)} <= set(listed), listed
    assert not set(namespaces) & set(listed), "namespaces are read inside their collection, not listed beside it"
    for collection, count in ((name, len(records)), (other, 4)):
        with backend.connector(backend.listed_name(collection)) as connector:
            assert connector.describe().count == count


def test_listing_a_store_that_is_not_there_or_refuses_fails_clearly(backend: Backend, standard) -> None:
    """Never an empty list for a store that could not be read: no store at the path, no server at the URL, or
    credentials it refuses (the error shows none of them)."""
    lister = load_connector(backend.connector_name)
    unreachable = backend.unreachable_kwargs("anything")
    if unreachable is None:
        assert isinstance(backend, EmbeddedBackend)
        absent = backend.workdir / "absent" / backend.store
        with pytest.raises(ConnectorError) as error:
            lister.list_collections(**backend.store_kwargs(path=str(absent)))
        assert str(absent) in str(error.value)
    else:
        started = time.monotonic()
        with pytest.raises(ConnectorError) as error:
            lister.list_collections(**backend.store_kwargs(**unreachable))
        assert time.monotonic() - started < 60
        assert "127.0.0.1" in str(error.value) or "localhost" in str(error.value)
    bad = backend.bad_credentials_kwargs(standard[0])
    if bad is not None:
        with pytest.raises(VdbguardError) as refused:
            lister.list_collections(**backend.store_kwargs(**bad))
        message = str(refused.value)
        assert "credential" in message.lower() or "api key" in message.lower() or "auth" in message.lower()
        assert not [value for value in bad.values() if isinstance(value, str) and len(value) > 6 and value in message]


def test_unreachable_host_fails_fast_and_clearly(backend: Backend) -> None:
    kwargs = backend.unreachable_kwargs("anything")
    if kwargs is None:
        pytest.skip(f"{backend.id} is embedded")
    started = time.monotonic()
    with pytest.raises(ConnectorError) as error, backend.connector("anything", **kwargs) as connector:
        connector.describe()
    assert time.monotonic() - started < 60
    assert "127.0.0.1" in str(error.value) or "localhost" in str(error.value)


def test_bad_credentials_are_a_clear_error_without_the_secret(backend: Backend, standard) -> None:
    kwargs = backend.bad_credentials_kwargs(standard[0])
    if kwargs is None:
        pytest.skip(f"{backend.id} has no credentials")
    with pytest.raises(VdbguardError) as error, backend.connector(standard[0], **kwargs) as connector:
        connector.describe()
    message = str(error.value)
    assert "credential" in message.lower() or "api key" in message.lower() or "auth" in message.lower()
    for value in kwargs.values():
        if isinstance(value, str) and len(value) > 6:
            assert value not in message


def test_transient_errors_are_retried(backend: Backend, standard) -> None:
    if not backend.transient_errors:
        pytest.skip(f"{backend.id} cannot inject transient errors")
    name, records = standard
    with backend.failing(2):
        ids = ids_of(read_all(backend, name, batch_size=50))
    assert sorted(ids) == sorted(r.id for r in records)
