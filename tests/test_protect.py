"""protect_collection against real embedded stores: Chroma -> Chroma and Qdrant -> Qdrant."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from vdbguard.connectors.chroma import ChromaConnector
from vdbguard.connectors.qdrant import QdrantConnector

from tests.helpers import Offset, Rotation, make_chroma_store, make_records
from vdbguard.errors import VdbguardError
from vdbguard.protect import MARK_KEY, ProtectResult, protect_collection
from vdbguard.records import VectorRecord
from vdbguard.transforms.base import Transform


class CenteredTruncate(Transform):
    """Needs a fit (the mean) and changes the dimension, like PCA: keeps the first ``strength`` coordinates."""

    name = "centered-truncate"
    description = "centre, keep the first k coordinates"
    strength_meaning = "k"
    needs_fit = True

    def fit(self, vectors: np.ndarray, labels: np.ndarray | None = None) -> CenteredTruncate:
        self.fitted_on = len(vectors)
        self.mean = np.asarray(vectors, dtype=np.float32).mean(axis=0)
        return self

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        return (np.asarray(vectors, dtype=np.float32) - self.mean)[:, : int(self.strength)]

    def apply_query(self, vectors: np.ndarray) -> np.ndarray:
        return self.apply(vectors)


class Noise(Transform):
    """Seeded Gaussian noise drawn from one generator per instance (like vdbguard's gaussian transform)."""

    name = "test-noise"
    description = "N(0, strength^2) per coordinate"
    strength_meaning = "sigma"

    def __init__(self, strength: float, seed: int | None = None) -> None:
        super().__init__(strength, seed)
        self.rng = np.random.default_rng(seed)

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        rows = np.asarray(vectors, dtype=np.float32)
        return rows + self.rng.standard_normal(rows.shape, dtype=np.float32) * np.float32(self.strength)

    def params(self) -> dict[str, Any]:
        return {"strength": self.strength, "seed": self.seed}


def read_all(connector: Any) -> dict[str, VectorRecord]:
    with connector:
        return {r.id: r for batch in connector.iter_batches(batch_size=100) for r in batch.records}


def marked_by(record: VectorRecord) -> list[str]:
    """The transforms a record's protection mark names, oldest first."""
    return [mark["transform"] for mark in json.loads(record.payload.get(MARK_KEY, "[]"))]


def without_mark(record: VectorRecord) -> dict[str, Any]:
    return {key: value for key, value in record.payload.items() if key != MARK_KEY}


def make_qdrant_store(path: Path, collection: str, n: int, dim: int, seed: int) -> list[VectorRecord]:
    """An l2 collection (cosine ones are normalised on write, which would blur the checks)."""
    records = make_records(n, dim, seed)
    for i, record in enumerate(records):
        record.id = str(i + 1)
    with QdrantConnector(collection=collection, path=path) as connector:
        connector.ensure_collection(dim, "l2")
        connector.upsert(records)
    return records


class CrashAfterUpserts(ChromaConnector):
    """A real Chroma target whose process 'dies' right after its n-th write reached the store."""

    def __init__(self, crash_after: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.crash_after, self.calls = crash_after, 0

    def upsert(self, records: Any) -> None:
        super().upsert(records)
        self.calls += 1
        if self.calls == self.crash_after:
            raise KeyboardInterrupt("simulated kill between the write and the state update")


def copy_notes(tmp_path: Path, target: ChromaConnector | None = None, **options: Any) -> ProtectResult:
    """Chroma ``src/notes`` copied into ``dst/notes-protected`` through ``Offset(0.5)``, 50 records a batch."""
    if target is None:
        target = ChromaConnector(collection="notes-protected", path=tmp_path / "dst", create=True)
    source = ChromaConnector(collection="notes", path=tmp_path / "src")
    return protect_collection(source, target, Offset(0.5), batch_size=50, **options)


def test_chroma_to_chroma_copies_every_record_through_the_transform(tmp_path: Path) -> None:
    source_records = make_chroma_store(tmp_path / "src", "notes", 130, 16, seed=1)
    seen: list[int] = []
    result = copy_notes(tmp_path, progress=seen.append)
    assert (result.copied, result.skipped, result.dimension, result.resumed) == (130, 0, 16, False)
    assert seen == [50, 50, 30]
    copied = read_all(ChromaConnector(collection="notes-protected", path=tmp_path / "dst"))
    assert sorted(copied) == sorted(r.id for r in source_records)
    for record in source_records:
        got = copied[record.id]
        np.testing.assert_allclose(got.vector, record.vector + 0.5, atol=1e-6)
        assert without_mark(got) == record.payload and got.text == record.text
        assert marked_by(got) == ["offset"]  # what stops a later run applying offset to it again
    untouched = read_all(ChromaConnector(collection="notes", path=tmp_path / "src"))
    np.testing.assert_allclose(untouched[source_records[0].id].vector, source_records[0].vector, atol=1e-6)


def test_qdrant_to_qdrant_fits_first_and_takes_the_output_dimension(tmp_path: Path) -> None:
    source_records = make_qdrant_store(tmp_path / "src", "notes", 90, 12, seed=2)
    transform = CenteredTruncate(5)
    result = protect_collection(
        QdrantConnector(collection="notes", path=tmp_path / "src"),
        QdrantConnector(collection="notes_protected", path=tmp_path / "dst"),
        transform,
        batch_size=40,
        fit_sample=60,
    )
    assert transform.fitted_on == 60  # a reservoir sample of the source, not all of it
    assert (result.copied, result.skipped, result.dimension) == (90, 0, 5)
    target = QdrantConnector(collection="notes_protected", path=tmp_path / "dst")
    assert target.describe().dimension == 5
    copied = read_all(target)
    assert sorted(copied, key=int) == [r.id for r in source_records]
    for record in source_records:
        expected = transform.apply(record.vector[None])[0]
        np.testing.assert_allclose(copied[record.id].vector, expected, atol=1e-5)
        assert without_mark(copied[record.id]) == {**record.payload, "text": record.text}


def test_qdrant_named_vectors_and_records_without_a_vector(tmp_path: Path) -> None:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(tmp_path / "src"))
    params = models.VectorParams(size=4, distance=models.Distance.EUCLID)
    client.create_collection("multi", vectors_config={"a": params, "b": params})
    rows = np.random.default_rng(3).standard_normal((3, 2, 4)).astype(np.float32)
    client.upsert(
        "multi",
        [
            models.PointStruct(id=1, vector={"a": rows[0, 0].tolist(), "b": rows[0, 1].tolist()}, payload={"n": 1}),
            models.PointStruct(id=2, vector={"a": rows[1, 0].tolist(), "b": rows[1, 1].tolist()}, payload={"n": 2}),
            models.PointStruct(id=3, vector={"b": rows[2, 1].tolist()}, payload={"n": 3}),  # no primary vector
        ],
    )
    client.close()
    result = protect_collection(
        QdrantConnector(collection="multi", path=tmp_path / "src"),
        QdrantConnector(collection="multi", path=tmp_path / "dst"),
        Offset(1.0),
    )
    assert (result.copied, result.skipped) == (2, 1)
    assert "'3'" in result.problems[0] and "missing" in result.problems[0]
    copied = read_all(QdrantConnector(collection="multi", path=tmp_path / "dst"))
    assert sorted(copied) == ["1", "2"]
    for pid, row in (("1", 0), ("2", 1)):
        np.testing.assert_allclose(copied[pid].named_vectors["a"], rows[row, 0] + 1.0, atol=1e-5)
        np.testing.assert_allclose(copied[pid].named_vectors["b"], rows[row, 1] + 1.0, atol=1e-5)


def test_interrupted_copy_resumes_without_duplicates(tmp_path: Path) -> None:
    source_records = make_chroma_store(tmp_path / "src", "notes", 200, 8, seed=4)
    state = tmp_path / "state" / "protect.json"
    crashing = CrashAfterUpserts(3, collection="notes-protected", path=tmp_path / "dst", create=True)
    with pytest.raises(KeyboardInterrupt):
        copy_notes(tmp_path, crashing, state_path=state)
    crashing.close()
    saved = json.loads(state.read_text())
    assert (saved["cursor"], saved["copied"], saved["done"]) == ("offset:100", 100, False)  # batch 3 unrecorded
    seen: list[int] = []
    result = copy_notes(tmp_path, state_path=state, progress=seen.append)
    assert seen == [50, 50] and result.resumed and (result.copied, result.skipped) == (200, 0)
    target = ChromaConnector(collection="notes-protected", path=tmp_path / "dst")
    assert target.describe().count == 200
    copied = read_all(target)
    assert sorted(copied) == sorted(r.id for r in source_records)
    for record in source_records:
        np.testing.assert_allclose(copied[record.id].vector, record.vector + 0.5, atol=1e-6)
    again = copy_notes(tmp_path, target, state_path=state)
    assert again.copied == 200 and again.resumed  # a finished copy is not redone


def test_resume_refuses_another_transform(tmp_path: Path) -> None:
    make_chroma_store(tmp_path / "src", "notes", 60, 8, seed=5)
    state = tmp_path / "protect.json"

    def run(transform: Transform, crash_after: int | None = None) -> Any:
        target: ChromaConnector = (
            CrashAfterUpserts(crash_after, collection="prot", path=tmp_path / "dst", create=True)
            if crash_after
            else ChromaConnector(collection="prot", path=tmp_path / "dst", create=True)
        )
        source = ChromaConnector(collection="notes", path=tmp_path / "src")
        return protect_collection(source, target, transform, batch_size=20, state_path=state)

    with pytest.raises(KeyboardInterrupt):
        run(Rotation(1.0, seed=1), crash_after=2)
    with pytest.raises(VdbguardError, match="differs from the one"):
        run(Rotation(1.0, seed=2))  # same name and params, another key: a mixed target would break search
    with pytest.raises(VdbguardError, match="different params"):
        run(Rotation(2.0, seed=1))
    assert run(Rotation(1.0, seed=1)).copied == 60


def test_in_place_needs_explicit_consent(tmp_path: Path) -> None:
    source_records = make_qdrant_store(tmp_path / "store", "notes", 30, 6, seed=6)
    connector = QdrantConnector(collection="notes", path=tmp_path / "store")
    with pytest.raises(VdbguardError, match="in place"):
        protect_collection(connector, connector, Offset(1.0))
    twin = QdrantConnector(collection="notes", path=tmp_path / "store")
    with pytest.raises(VdbguardError, match="in place"):
        protect_collection(connector, twin, Offset(1.0))
    twin.close()
    result = protect_collection(connector, connector, Offset(1.0), batch_size=7, in_place=True)
    assert result.copied == 30
    rewritten = read_all(QdrantConnector(collection="notes", path=tmp_path / "store"))
    for record in source_records:  # each vector transformed exactly once
        np.testing.assert_allclose(rewritten[record.id].vector, record.vector + 1.0, atol=1e-5)


def test_in_place_on_chroma_transforms_each_record_once(tmp_path: Path) -> None:
    source_records = make_chroma_store(tmp_path / "store", "notes", 45, 6, seed=7)
    connector = ChromaConnector(collection="notes", path=tmp_path / "store")
    result = protect_collection(connector, connector, Offset(1.0), batch_size=20, in_place=True)
    assert (result.copied, result.skipped) == (45, 0)
    rewritten = read_all(ChromaConnector(collection="notes", path=tmp_path / "store"))
    for record in source_records:
        np.testing.assert_allclose(rewritten[record.id].vector, record.vector + 1.0, atol=1e-6)


def in_place(path: Path, transform: Transform, collection: str = "notes", **options: Any) -> ProtectResult:
    """``transform`` over Chroma ``path/collection`` in place, 20 records a batch (``connector``: another one)."""
    connector = options.pop("connector", None) or ChromaConnector(collection=collection, path=path)
    with connector:
        return protect_collection(connector, connector, transform, batch_size=20, in_place=True, **options)


def test_in_place_killed_between_a_write_and_its_state_applies_the_transform_once(tmp_path: Path) -> None:
    """The batch written but not yet in the state is read again on resume: its records carry the mark, so they
    are left as they are instead of taking the offset (or noise) a second time; a rerun then changes nothing."""
    records = make_chroma_store(tmp_path / "store", "notes", 70, 6, seed=11)
    state = tmp_path / "protect.json"
    crashing = CrashAfterUpserts(3, collection="notes", path=tmp_path / "store")
    with pytest.raises(KeyboardInterrupt):
        in_place(tmp_path / "store", Offset(1.0), connector=crashing, state_path=state)
    assert json.loads(state.read_text())["copied"] == 40  # the third batch was written, not recorded
    result = in_place(tmp_path / "store", Offset(1.0), state_path=state)
    assert (result.copied, result.already_protected, result.skipped, result.resumed) == (50, 20, 0, True)
    stored = read_all(ChromaConnector(collection="notes", path=tmp_path / "store"))
    for record in records:  # each offset exactly once
        np.testing.assert_allclose(stored[record.id].vector, record.vector + 1.0, atol=1e-6)
        assert marked_by(stored[record.id]) == ["offset"] and without_mark(stored[record.id]) == record.payload

    again = in_place(tmp_path / "store", Offset(1.0), state_path=state)
    assert again.done_before and "finished before" in again.summary("offset", "notes")
    lost_state = in_place(tmp_path / "store", Offset(1.0))  # the state deleted, or a scheduled job run twice
    assert (lost_state.copied, lost_state.already_protected) == (0, 70)
    assert "70 records already carried its mark" in lost_state.summary("offset", "notes")
    after = read_all(ChromaConnector(collection="notes", path=tmp_path / "store"))
    for record in records:
        np.testing.assert_array_equal(after[record.id].vector, stored[record.id].vector)
        assert after[record.id].payload == stored[record.id].payload


def test_in_place_over_records_another_transform_marked_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    records = make_chroma_store(tmp_path / "store", "notes", 50, 6, seed=12)
    crashing = CrashAfterUpserts(1, collection="notes", path=tmp_path / "store")
    with pytest.raises(KeyboardInterrupt):  # 20 records hold offset 1, the rest nothing yet, and no state
        in_place(tmp_path / "store", Offset(1.0), connector=crashing)
    before = read_all(ChromaConnector(collection="notes", path=tmp_path / "store"))
    with pytest.raises(VdbguardError, match=rf"field 'payload.{MARK_KEY}' says offset with other settings") as refused:
        in_place(tmp_path / "store", Offset(2.0))
    assert "(and 19 more records)" in str(refused.value) and "new collection" in (refused.value.hint or "")
    after = read_all(ChromaConnector(collection="notes", path=tmp_path / "store"))
    for record in records:  # nothing written: not even the records no transform had marked
        np.testing.assert_array_equal(after[record.id].vector, before[record.id].vector)
    result = in_place(tmp_path / "store", Offset(1.0))  # the transform that made the mark finishes the job
    assert (result.copied, result.already_protected) == (30, 20)
    done = read_all(ChromaConnector(collection="notes", path=tmp_path / "store"))
    for record in records:
        np.testing.assert_allclose(done[record.id].vector, record.vector + 1.0, atol=1e-6)

    with ChromaConnector(collection="notes", path=tmp_path / "store") as store:  # a mark vdbguard did not write
        store.upsert([VectorRecord(records[0].id, records[0].vector, payload={MARK_KEY: "yes"}, text="x")])
    with pytest.raises(VdbguardError, match=rf"record '{records[0].id}': field 'payload.{MARK_KEY}' is not a"):
        in_place(tmp_path / "store", Offset(1.0))


def test_a_copy_marks_what_it_writes_takes_what_its_transform_marked_as_it_is_and_layers_others(
    tmp_path: Path,
) -> None:
    records = make_chroma_store(tmp_path / "src", "notes", 30, 6, seed=13)
    assert copy_notes(tmp_path).copied == 30  # dst/notes-protected: offset 0.5, marked

    def copy(collection: str, transform: Transform, into: str) -> ProtectResult:
        with (
            ChromaConnector(collection=collection, path=tmp_path / "dst") as source,
            ChromaConnector(collection=into, path=tmp_path / "dst", create=True) as target,
        ):
            return protect_collection(source, target, transform, batch_size=20)

    again = copy("notes-protected", Offset(0.5), "twice")  # the copy copied again through the same transform
    assert (again.copied, again.already_protected) == (0, 30)
    layered = copy("notes-protected", Offset(2.0), "layered")  # another setting: a second protection, named too
    assert (layered.copied, layered.already_protected) == (30, 0)
    twice, both = (read_all(ChromaConnector(collection=c, path=tmp_path / "dst")) for c in ("twice", "layered"))
    for record in records:
        np.testing.assert_allclose(twice[record.id].vector, record.vector + 0.5, atol=1e-6)
        np.testing.assert_allclose(both[record.id].vector, record.vector + 2.5, atol=1e-6)
        assert marked_by(both[record.id]) == ["offset", "offset"] and without_mark(both[record.id]) == record.payload
    assert in_place(tmp_path / "dst", Offset(0.5), "layered").already_protected == 30  # one of its layers
    with pytest.raises(VdbguardError, match="says offset\\+offset protected it already"):
        in_place(tmp_path / "dst", Offset(3.0), "layered")


def test_in_place_on_a_table_with_nowhere_to_keep_the_mark_is_refused(tmp_path: Path) -> None:
    import lancedb
    from vdbguard.connectors.lancedb import LanceDBConnector

    vectors = np.random.default_rng(14).standard_normal((5, 4)).astype(np.float32)
    rows = [{"id": f"r{i}", "vector": v.tolist(), "text": f"note {i}", "n": i} for i, v in enumerate(vectors)]
    lancedb.connect(str(tmp_path / "lance")).create_table("plain", data=rows)  # columns only, no payload column
    with (
        LanceDBConnector(collection="plain", path=tmp_path / "lance") as table,
        pytest.raises(VdbguardError, match="nowhere to keep it") as refused,
    ):
        protect_collection(table, table, Offset(1.0), in_place=True)
    assert f"column named {MARK_KEY}" in (refused.value.hint or "")
    stored = read_all(LanceDBConnector(collection="plain", path=tmp_path / "lance"))
    for i, vector in enumerate(vectors):
        np.testing.assert_array_equal(stored[f"r{i}"].vector, vector)


def test_resume_refuses_to_replay_seeded_noise(tmp_path: Path) -> None:
    source_records = make_chroma_store(tmp_path / "src", "notes", 60, 8, seed=8)
    state = tmp_path / "protect.json"

    def run(transform: Transform, target: ChromaConnector) -> Any:
        source = ChromaConnector(collection="notes", path=tmp_path / "src")
        return protect_collection(source, target, transform, batch_size=20, state_path=state)

    with pytest.raises(KeyboardInterrupt):
        run(Noise(0.1, seed=3), CrashAfterUpserts(2, collection="noisy", path=tmp_path / "dst", create=True))
    target = ChromaConnector(collection="noisy", path=tmp_path / "dst", create=True)
    with pytest.raises(VdbguardError, match="seed=None"):
        run(Noise(0.1, seed=3), target)
    assert run(Noise(0.1, seed=None), target).copied == 60
    copied = read_all(ChromaConnector(collection="noisy", path=tmp_path / "dst"))
    assert sorted(copied) == sorted(r.id for r in source_records)
    noise = np.stack([copied[r.id].vector - r.vector for r in source_records])
    assert 0.05 < float(noise.std()) < 0.2  # every record carries noise of the requested scale
    rounded = {tuple(np.round(row, 5)) for row in noise}
    assert len(rounded) == len(source_records)  # and no two records share it


def test_a_resumed_copy_reuses_the_saved_fit(tmp_path: Path) -> None:
    from vdbguard.transforms.fitting import load_fit
    from vdbguard.transforms.quantize import ProductQuantize

    source_records = make_chroma_store(tmp_path / "src", "notes", 120, 16, seed=9)
    state = tmp_path / "protect.json"
    fit_file = tmp_path / "protect.json.fit.npz"  # kept beside the state file

    def run(target: ChromaConnector, **options: Any) -> ProtectResult:
        source = ChromaConnector(collection="notes", path=tmp_path / "src")
        # seed=None: refitting would give other codebooks, so only the saved fit can make a resume consistent
        return protect_collection(source, target, ProductQuantize(4), batch_size=40, **options)

    with pytest.raises(KeyboardInterrupt):
        run(CrashAfterUpserts(2, collection="notes-pq", path=tmp_path / "dst", create=True), state_path=state)
    assert fit_file.exists()
    fit_file.rename(tmp_path / "aside.npz")
    target = ChromaConnector(collection="notes-pq", path=tmp_path / "dst", create=True)
    with pytest.raises(VdbguardError, match="differs from the one"):  # what a resume did before: refit, refuse
        run(target, state_path=state)
    assert not fit_file.exists()  # a refused fit is not kept
    (tmp_path / "aside.npz").rename(fit_file)
    assert run(target, state_path=state).resumed

    # an uninterrupted copy through the same fit (loaded from fit_path) stores exactly the same vectors
    fresh = ChromaConnector(collection="notes-pq", path=tmp_path / "dst2", create=True)
    assert run(fresh, fit_path=fit_file).copied == 120
    resumed, uninterrupted = (
        read_all(ChromaConnector(collection="notes-pq", path=tmp_path / d)) for d in ("dst", "dst2")
    )
    expected = load_fit(ProductQuantize(4), fit_file).apply(np.stack([r.vector for r in source_records]))
    for record, row in zip(source_records, expected, strict=True):
        np.testing.assert_allclose(resumed[record.id].vector, row, atol=1e-6)
        np.testing.assert_array_equal(resumed[record.id].vector, uninterrupted[record.id].vector)


def test_fit_path_is_saved_then_loaded_and_refused_for_other_settings(tmp_path: Path) -> None:
    from vdbguard.transforms.quantize import ProductQuantize

    make_qdrant_store(tmp_path / "src", "notes", 40, 16, seed=10)
    fit_file = tmp_path / "pq.npz"

    def run(transform: Transform, collection: str) -> ProtectResult:
        source = QdrantConnector(collection="notes", path=tmp_path / "src")
        target = QdrantConnector(collection=collection, path=tmp_path / "dst")
        return protect_collection(source, target, transform, fit_path=fit_file)

    first, second = ProductQuantize(4), ProductQuantize(4)  # seed=None: two fits would differ
    run(first, "a")
    assert fit_file.exists() and run(second, "b").copied == 40
    for name, array in first.fit_state().items():
        np.testing.assert_array_equal(second.fit_state()[name], array)
    with pytest.raises(VdbguardError, match="pq: the saved fit"):
        run(ProductQuantize(3), "c")


NAMED = [
    "Refund requested by Dana Whitfield, charged twice on the premium plan.",
    "Dr. Okafor asked us to move the review to Thursday morning.",
    "Escalated by Priya Raman: the invoice for March is still missing.",
    "The printer on the third floor jams again after the update.",
    "Ship the replacement desk to the Leeds office next week.",
]


def store_named(path: Path, vectors: np.ndarray) -> None:
    """Keep each of NAMED with its vector as record r0, r1, ... of a new Chroma collection "tickets" at ``path``."""
    with ChromaConnector(collection="tickets", path=path, create=True) as store:
        store.upsert([VectorRecord(f"r{i}", v, text=t) for i, (t, v) in enumerate(zip(NAMED, vectors, strict=True))])


def test_redaction_of_an_existing_collection_re_embeds_each_redacted_text_and_redacts_what_it_stores(
    embedder, tmp_path: Path
) -> None:
    """redact re-embeds each record's redacted text with the collection's model (the copy's vector is exactly that
    embedding), redacts the stored text and payload, names and skips a record with no text (never copying its old
    vector), resumes from its state, and keeps or drops the stored text when told."""
    from vdbguard.transforms.redaction import TextRedaction

    path = tmp_path / "store"
    records = [
        VectorRecord(f"r{i}", vector, payload={"author": "Dana Whitfield", "kind": "ticket"}, text=text)
        for i, (text, vector) in enumerate(zip(NAMED, embedder.encode(NAMED), strict=True))
    ]
    records.append(VectorRecord("bare", embedder.encode(["no text kept"])[0], payload={"kind": "ticket"}))
    with ChromaConnector(collection="tickets", path=path, create=True) as store:
        store.upsert(records)
    redaction = TextRedaction(strength=0.4)
    state = tmp_path / "protect.json"
    with (
        ChromaConnector(collection="tickets", path=path) as source,
        ChromaConnector(collection="safe", path=path, create=True) as target,
    ):
        result = protect_collection(
            source, target, redaction, state_path=state, embed=embedder.encode, embedder_name=embedder.name
        )
    assert (result.copied, result.skipped) == (5, 1) and "'bare'" in result.problems[0], result
    with ChromaConnector(collection="safe", path=path) as copy:
        copied = read_all(copy)
    assert set(copied) == {f"r{i}" for i in range(5)}, "the record without text is not copied with its old vector"
    redacted = redaction.transform_texts(NAMED)
    for i, text in enumerate(redacted):
        record = copied[f"r{i}"]
        assert record.text == text and record.payload["author"] == "<PERSON>" and record.payload["kind"] == "ticket"
        np.testing.assert_allclose(record.vector, embedder.encode([text])[0], atol=1e-5)
    assert all(name not in json.dumps([r.text for r in copied.values()]) for name in ("Whitfield", "Okafor", "Priya"))
    assert copied["r3"].text == NAMED[3], "a text without PII is embedded as it was"

    with (
        ChromaConnector(collection="tickets", path=path) as source,
        ChromaConnector(collection="safe", path=path) as target,
    ):
        again = protect_collection(
            source, target, redaction, state_path=state, embed=embedder.encode, embedder_name=embedder.name
        )
        assert again.resumed and again.copied == 5
        with pytest.raises(VdbguardError, match="needs the collection's embedding model"):
            protect_collection(source, target, redaction)
    with ChromaConnector(collection="safe", path=path) as safe:  # in place over the copy: redacted once is enough
        twice = protect_collection(
            safe, safe, redaction, in_place=True, embed=embedder.encode, embedder_name=embedder.name
        )
    assert (twice.copied, twice.already_protected) == (0, 5)
    for mode, expect in (("keep", NAMED[0]), ("drop", None)):
        with (
            ChromaConnector(collection="tickets", path=path) as source,
            ChromaConnector(collection=mode, path=path, create=True) as target,
        ):
            protect_collection(source, target, redaction, embed=embedder.encode, stored_text=mode)
            assert read_all(target)["r0"].text == expect


def test_redaction_refuses_a_collection_that_keeps_no_text(embedder, tmp_path: Path) -> None:
    from vdbguard.transforms.redaction import TextRedaction

    path = tmp_path / "store"
    with ChromaConnector(collection="bare", path=path, create=True) as store:
        store.upsert([VectorRecord(f"v{i}", v) for i, v in enumerate(embedder.encode(NAMED))])
    with (
        ChromaConnector(collection="bare", path=path) as source,
        ChromaConnector(collection="safe", path=path, create=True) as target,
        pytest.raises(VdbguardError, match="keeps no text beside its vectors") as refused,
    ):
        protect_collection(source, target, TextRedaction(), embed=embedder.encode)
    assert "vector transform" in (refused.value.hint or "")


def test_the_cli_redacts_an_existing_collection_and_keeps_its_text_when_told(embedder, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from vdbguard.cli import main

    path = tmp_path / "store"
    store_named(path, embedder.encode(NAMED))
    base = ["protect", "--connector", "chroma", "--path", str(path), "--collection", "tickets", "--no-scan"]
    base += ["--transform", "redact", "--strength", "0.4"]
    result = CliRunner().invoke(main, [*base, "--to-collection", "safe"])
    assert result.exit_code == 0 and "copied 5 records through redact" in result.output, result.output
    result = CliRunner().invoke(main, [*base, "--to-collection", "kept", "--payload", "keep"])
    assert result.exit_code == 0, result.output
    with ChromaConnector(collection="safe", path=path) as safe, ChromaConnector(collection="kept", path=path) as kept:
        assert "Whitfield" not in (read_all(safe)["r0"].text or "") and read_all(kept)["r0"].text == NAMED[0]


def test_a_text_redaction_leaves_as_it_was_keeps_its_vector_only_where_the_model_makes_it(
    embedder, tmp_path: Path
) -> None:
    """Re-embedding a text redaction did not change gives back its stored vector when the collection's vectors are
    the model's own: those are kept as stored. Vectors another model made are all embedded again (one space)."""
    from vdbguard.transforms.redaction import TextRedaction

    redaction = TextRedaction()
    changed = [redacted != text for text, redacted in zip(NAMED, redaction.transform_texts(NAMED), strict=True)]
    assert any(changed) and not all(changed)
    other_model = np.random.default_rng(3).normal(size=(len(NAMED), 384)).astype(np.float32)
    for name, vectors in (("own", embedder.encode(NAMED)), ("other", other_model)):
        path = tmp_path / name
        store_named(path, vectors)
        with (
            ChromaConnector(collection="tickets", path=path) as source,
            ChromaConnector(collection="safe", path=path, create=True) as target,
        ):
            protect_collection(source, target, redaction, embed=embedder.encode, embedder_name=embedder.name)
        with ChromaConnector(collection="safe", path=path) as copy:
            copied = read_all(copy)
        for i in range(len(NAMED)):
            vector = copied[f"r{i}"].vector
            if name == "own" and not changed[i]:
                assert np.array_equal(vector, vectors[i]), "kept as stored"
            else:
                np.testing.assert_allclose(vector, embedder.encode([copied[f"r{i}"].text])[0], atol=1e-5)


def test_protect_scans_before_and_after_and_exits_as_fail_on_says(embedder, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from vdbguard.cli import main
    from vdbguard.cli.common import exit_code
    from vdbguard.reports.schema import Report

    path = tmp_path / "store"
    store_named(path, embedder.encode(NAMED))
    base = ["protect", "--connector", "chroma", "--path", str(path), "--collection", "tickets", "--transform"]
    for fail_on in ("critical", "low"):
        out = tmp_path / fail_on
        arguments = [*base, "redact", "--to-collection", f"safe_{fail_on}", "--out", str(out), "--fail-on", fail_on]
        result = CliRunner().invoke(main, arguments)
        after = Report.model_validate_json((out / "after" / "report.json").read_text())
        before = Report.model_validate_json((out / "before" / "report.json").read_text())
        assert result.exit_code == exit_code((f.severity for f in after.iter_findings()), fail_on), result.output
        assert before.summary.records_scanned == after.summary.records_scanned == len(NAMED)
        assert "records flagged before and after protection" in result.output and "strength 0.4" in result.output
    assert "stored_text: PERSON" in result.output, "each kind and type before and after"
    gaussian = CliRunner().invoke(main, [*base, "gaussian", "--to-collection", "noisy", "--no-scan"])
    assert gaussian.exit_code == 0 and "strength 0.05" in gaussian.output, "each transform's own default strength"
