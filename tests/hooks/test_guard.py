"""Write-path hooks against real engines: embedded Qdrant and Chroma, and the official Pinecone and
Weaviate clients talking to the protocol doubles. Every check reads back what the engine stored."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers import Offset, Rotation
from vdbguard.errors import RecordError, VdbguardError
from vdbguard.hooks import ProtectAll, ProtectFlagged, guard

POISON = 999.0  # a first coordinate the failing transforms below refuse


class FailsOnPoison(Offset):
    name = "fails-on-poison"

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        vectors = np.asarray(vectors, dtype=np.float32)
        if (vectors[:, 0] == POISON).any():
            raise ValueError("cannot protect this row")
        return super().apply(vectors)


class NanOnPoison(Offset):
    name = "nan-on-poison"

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        out = super().apply(vectors)
        out[np.asarray(vectors)[:, 0] == POISON] = np.nan
        return out


class FailsOnRow(Offset):
    """Refuses one given vector (wherever it appears in a batch)."""

    name = "fails-on-row"

    def __init__(self, bad: np.ndarray) -> None:
        super().__init__(0.0)
        self.bad = np.asarray(bad, dtype=np.float32)

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        if np.isclose(np.asarray(vectors, dtype=np.float32), self.bad, atol=1e-6).all(axis=1).any():
            raise ValueError("refused row")
        return super().apply(vectors)


def unit_rows(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


# -- Qdrant (embedded) ----------------------------------------------------------------------------------


@pytest.fixture
def qdrant(tmp_path: Path) -> Iterator[Any]:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(tmp_path / "qdrant"))
    client.create_collection("plain", vectors_config=models.VectorParams(size=8, distance=models.Distance.EUCLID))
    client.create_collection(
        "named",
        vectors_config={
            "text": models.VectorParams(size=8, distance=models.Distance.EUCLID),
            "image": models.VectorParams(size=4, distance=models.Distance.EUCLID),
        },
        sparse_vectors_config={"bm25": models.SparseVectorParams()},
    )
    client.create_collection("cosine", vectors_config=models.VectorParams(size=8, distance=models.Distance.COSINE))
    yield client
    client.close()


def stored_qdrant(client: Any, collection: str, ids: list[Any]) -> dict[str, Any]:
    return {str(p.id): p for p in client.retrieve(collection, ids, with_vectors=True, with_payload=True)}


def test_qdrant_upsert_point_structs_stores_transformed_vectors(qdrant: Any) -> None:
    from qdrant_client import models

    vectors = unit_rows(3, 8)
    points = [models.PointStruct(id=i, vector=vectors[i].tolist(), payload={"text": f"note {i}"}) for i in range(3)]
    guarded = guard(qdrant, Offset(0.5))
    guarded.upsert("plain", points=points)
    stored = stored_qdrant(qdrant, "plain", [0, 1, 2])
    for i in range(3):
        np.testing.assert_allclose(stored[str(i)].vector, vectors[i] + 0.5, rtol=0, atol=1e-6)
        assert stored[str(i)].payload == {"text": f"note {i}"}
    assert points[0].vector == vectors[0].tolist()  # the caller's objects are not mutated
    assert guarded.count("plain").count == 3  # everything else is delegated
    assert [d.protect for d in guarded.last_decisions] == [True, True, True]


def test_qdrant_upsert_batch_and_named_vectors(qdrant: Any) -> None:
    from qdrant_client import models

    text, image = unit_rows(2, 8, seed=1), unit_rows(2, 4, seed=2)
    sparse = models.SparseVector(indices=[3, 7], values=[0.5, 0.25])
    guarded = guard(qdrant, Offset(1.0))
    guarded.upsert(
        collection_name="named",
        points=models.Batch(
            ids=[10, 11],
            vectors={"text": text.tolist(), "image": image.tolist()},
            payloads=[{"k": 0}, {"k": 1}],
        ),
    )
    guarded.upsert(
        "named",
        [models.PointStruct(id=12, vector={"text": text[0].tolist(), "image": image[0].tolist(), "bm25": sparse})],
    )
    stored = stored_qdrant(qdrant, "named", [10, 11, 12])
    for pid, row in (("10", 0), ("11", 1), ("12", 0)):
        np.testing.assert_allclose(stored[pid].vector["text"], text[row] + 1.0, atol=1e-6)
        np.testing.assert_allclose(stored[pid].vector["image"], image[row] + 1.0, atol=1e-6)
    assert stored["11"].payload == {"k": 1}
    bm25 = stored["12"].vector["bm25"]  # sparse vectors pass through untouched
    assert list(bm25.indices) == [3, 7] and np.allclose(bm25.values, [0.5, 0.25])


def test_qdrant_vector_names_limits_what_is_protected(qdrant: Any) -> None:
    from qdrant_client import models

    text, image = unit_rows(1, 8)[0], unit_rows(1, 4)[0]
    guarded = guard(qdrant, Offset(1.0), vector_names=["text"])
    guarded.upsert("named", [models.PointStruct(id=1, vector={"text": text.tolist(), "image": image.tolist()})])
    stored = stored_qdrant(qdrant, "named", [1])["1"]
    np.testing.assert_allclose(stored.vector["text"], text + 1.0, atol=1e-6)
    np.testing.assert_allclose(stored.vector["image"], image, atol=1e-6)


def test_qdrant_other_write_paths_are_protected(qdrant: Any) -> None:
    from qdrant_client import models

    vectors = unit_rows(6, 8, seed=3)
    guarded = guard(qdrant, Offset(2.0))
    guarded.upload_collection("plain", vectors=vectors[:2], ids=[0, 1], payload=[{"a": 1}, {"a": 2}], wait=True)
    guarded.upload_points("plain", [models.PointStruct(id=2, vector=vectors[2].tolist())], wait=True)
    guarded.batch_update_points(
        "plain",
        [
            models.UpsertOperation(upsert=models.PointsList(points=[models.PointStruct(id=3, vector=vectors[3])])),
            models.UpsertOperation(upsert=models.PointsBatch(batch=models.Batch(ids=[4], vectors=[vectors[4]]))),
        ],
    )
    guarded.update_vectors("plain", [models.PointVectors(id=0, vector=vectors[5].tolist())])
    stored = stored_qdrant(qdrant, "plain", [0, 1, 2, 3, 4])
    expected = {"0": vectors[5], "1": vectors[1], "2": vectors[2], "3": vectors[3], "4": vectors[4]}
    for pid, raw in expected.items():
        np.testing.assert_allclose(stored[pid].vector, raw + 2.0, atol=1e-6)
    assert stored["1"].payload == {"a": 2}


def test_qdrant_multivectors_are_protected_row_by_row(qdrant: Any) -> None:
    from qdrant_client import models

    qdrant.create_collection(
        "colbert",
        vectors_config={
            "tokens": models.VectorParams(
                size=4,
                distance=models.Distance.EUCLID,
                multivector_config=models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM),
            )
        },
    )
    tokens = [unit_rows(3, 4, seed=7), unit_rows(2, 4, seed=8)]  # a different number of token vectors each
    guarded = guard(qdrant, FailsOnPoison(1.0))
    guarded.upsert("colbert", [models.PointStruct(id=i, vector={"tokens": t.tolist()}) for i, t in enumerate(tokens)])
    stored = stored_qdrant(qdrant, "colbert", [0, 1])
    for i, t in enumerate(tokens):
        np.testing.assert_allclose(stored[str(i)].vector["tokens"], t + 1.0, atol=1e-6)
    poisoned = tokens[1].copy()
    poisoned[1, 0] = POISON
    points = [models.PointStruct(id=5, vector={"tokens": tokens[0].tolist()})]
    points.append(models.PointStruct(id=6, vector={"tokens": poisoned.tolist()}))
    with pytest.raises(RecordError) as raised:
        guarded.upsert("colbert", points)
    assert raised.value.record_id == "6" and raised.value.field == "vector['tokens']"
    assert qdrant.count("colbert").count == 2


def test_qdrant_queries_on_unprotected_vector_names_stay_raw(qdrant: Any) -> None:
    from qdrant_client import models

    params = models.VectorParams(size=8, distance=models.Distance.COSINE)
    qdrant.create_collection("two", vectors_config={"private": params, "public": params})
    vectors = unit_rows(10, 8, seed=11)
    guarded = guard(qdrant, Rotation(dim=8), vector_names=["private"])
    guarded.upsert(
        "two",
        [models.PointStruct(id=i, vector={"private": v.tolist(), "public": v.tolist()}) for i, v in enumerate(vectors)],
    )
    for using in ("private", "public"):
        hit = guarded.query_points("two", query=vectors[2].tolist(), using=using, limit=1).points[0]
        assert hit.id == 2 and hit.score == pytest.approx(1.0, abs=1e-5), using


def test_qdrant_fails_closed_and_names_the_record(qdrant: Any) -> None:
    from qdrant_client import models

    vectors = unit_rows(3, 8)
    bad = vectors.copy()
    bad[1, 0] = POISON
    guard(qdrant, Offset(0.0)).upsert("plain", [models.PointStruct(id=100, vector=vectors[0].tolist())])
    before = qdrant.count("plain").count
    points = [models.PointStruct(id=i, vector=bad[i].tolist()) for i in range(3)]
    with pytest.raises(RecordError) as raised:
        guard(qdrant, FailsOnPoison(1.0)).upsert("plain", points)
    assert raised.value.record_id == "1" and raised.value.field == "vector"
    assert "cannot protect this row" in str(raised.value)
    with pytest.raises(RecordError) as raised:
        guard(qdrant, NanOnPoison(1.0)).upsert("plain", models.Batch(ids=[7, 8, 9], vectors=bad.tolist()))
    assert raised.value.record_id == "8" and "NaN" in raised.value.problem
    nan_input = [models.PointStruct(id=5, vector=[float("nan")] * 8)]
    with pytest.raises(RecordError, match="NaN"):
        guard(qdrant, Offset(1.0)).upsert("plain", nan_input)
    for transform, problem in ((FailsOnPoison(1.0), "cannot protect this row"), (NanOnPoison(1.0), "NaN")):
        with pytest.raises(RecordError, match=problem) as raised:  # numpy in, numpy out: checked alike
            guard(qdrant, transform).upload_collection("plain", vectors=bad, ids=[20, 21, 22], wait=True)
        assert raised.value.record_id == "21" and raised.value.field == "vector"
    bad[2, 3] = float("inf")
    with pytest.raises(RecordError, match="infinite") as raised:
        guard(qdrant, Offset(1.0)).upload_collection("plain", vectors=bad, ids=[30, 31, 32], wait=True)
    assert raised.value.record_id == "32"
    assert qdrant.count("plain").count == before  # nothing of the failed calls was written


def test_qdrant_refuses_vectors_it_cannot_see(qdrant: Any) -> None:
    from qdrant_client import models

    guarded = guard(qdrant, Offset(1.0))
    point = models.PointStruct(id=1, vector=models.Document(text="Jane Doe", model="any/model"))
    with pytest.raises(RecordError, match="explicit vectors") as raised:
        guarded.upsert("plain", [point])
    assert raised.value.record_id == "1"
    assert qdrant.count("plain").count == 0


def test_qdrant_queries_follow_a_space_changing_transform(qdrant: Any) -> None:
    from qdrant_client import models

    vectors = unit_rows(20, 8, seed=5)
    guarded = guard(qdrant, Rotation(dim=8))
    guarded.upsert("cosine", [models.PointStruct(id=i, vector=vectors[i].tolist()) for i in range(20)])
    stored = stored_qdrant(qdrant, "cosine", [7])["7"].vector
    assert not np.allclose(stored, vectors[7], atol=1e-3)  # the store holds rotated vectors
    hit = guarded.query_points("cosine", query=vectors[7].tolist(), limit=1).points[0]
    assert hit.id == 7 and hit.score == pytest.approx(1.0, abs=1e-5)
    nested = guarded.query_points(
        "cosine",
        prefetch=models.Prefetch(query=models.NearestQuery(nearest=vectors[3].tolist()), limit=5),
        query=vectors[3],
        limit=1,
    ).points[0]
    assert nested.id == 3 and nested.score == pytest.approx(1.0, abs=1e-5)
    raw = qdrant.query_points("cosine", query=vectors[7].tolist(), limit=1).points[0]
    assert raw.score < 0.99  # unguarded queries miss the rotated space


def test_space_changing_transform_refuses_selective_policy(qdrant: Any) -> None:
    from vdbguard.detectors.base import Detector

    class NeverPii(Detector):
        name = "never"

        def detect(self, text: str) -> list:
            return []

    with pytest.raises(VdbguardError, match="changes the stored space"):
        guard(qdrant, Rotation(), policy=ProtectFlagged(NeverPii()))
    with pytest.raises(VdbguardError, match="either policy or detector"):
        guard(qdrant, Offset(1.0), policy=ProtectAll(), detector=NeverPii())


def test_guard_refuses_unknown_and_already_guarded_clients(qdrant: Any) -> None:
    with pytest.raises(VdbguardError, match="does not know how to protect"):
        guard(object(), Offset(1.0))
    guarded = guard(qdrant, Offset(1.0))
    with pytest.raises(VdbguardError, match="already guarded"):
        guard(guarded, Offset(1.0))
    with pytest.raises(VdbguardError, match="Transform"):
        guard(qdrant, lambda v: v)  # type: ignore[arg-type]


def test_guard_fits_on_a_sample_saves_the_fit_and_a_second_guard_loads_it(qdrant: Any, tmp_path: Path) -> None:
    from qdrant_client import models

    from vdbguard.transforms.quantize import ProductQuantize

    fit_path, vectors = tmp_path / "pq.fit.npz", unit_rows(4, 8, seed=5)
    first = ProductQuantize(3)  # seed=None: a second fit would give other codebooks
    writer = guard(qdrant, first, fit_sample=unit_rows(64, 8, seed=4), fit_path=fit_path)
    assert first.fitted and fit_path.exists()
    writer.upsert("plain", [models.PointStruct(id=i, vector=vectors[i].tolist()) for i in range(2)])
    second = ProductQuantize(3)
    other_process = guard(qdrant, second, fit_path=fit_path)  # no sample: the fit can only come from the file
    other_process.upsert("plain", [models.PointStruct(id=i, vector=vectors[i].tolist()) for i in range(2, 4)])
    stored = stored_qdrant(qdrant, "plain", [0, 1, 2, 3])
    expected = first.apply(vectors)
    for i in range(4):
        np.testing.assert_allclose(stored[str(i)].vector, expected[i], atol=1e-6)


def test_guard_refuses_an_unfitted_transform_before_any_write(qdrant: Any, tmp_path: Path) -> None:
    from vdbguard.transforms.leace import LeaceErasure
    from vdbguard.transforms.quantize import Int8Quantize

    with pytest.raises(VdbguardError, match="'int8' needs a fit before anything is written") as raised:
        guard(qdrant, Int8Quantize(8), fit_path=tmp_path / "missing.npz")
    assert "fit_sample=" in raised.value.hint
    with pytest.raises(VdbguardError, match="needs labels") as raised:
        guard(qdrant, LeaceErasure(1.0), fit_sample=unit_rows(64, 8))
    assert "corpus_concept_set" in raised.value.hint
    assert qdrant.count("plain").count == 0 and not (tmp_path / "missing.npz").exists()


# -- Chroma (embedded) -----------------------------------------------------------------------------------


@pytest.fixture
def chroma(tmp_path: Path) -> Iterator[Any]:
    import chromadb

    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"))
    yield client


def stored_chroma(client: Any, name: str, ids: list[str]) -> dict[str, tuple[np.ndarray, Any, Any]]:
    got = client.get_collection(name, embedding_function=None).get(
        ids=ids, include=["embeddings", "documents", "metadatas"]
    )
    return {
        i: (np.asarray(e), d, m)
        for i, e, d, m in zip(got["ids"], got["embeddings"], got["documents"], got["metadatas"], strict=True)
    }


def test_chroma_client_collections_are_guarded(chroma: Any) -> None:
    vectors = unit_rows(4, 8)
    guarded = guard(chroma, Offset(0.25))
    col = guarded.get_or_create_collection("notes", embedding_function=None)
    col.add(
        ids=["a", "b"],
        embeddings=vectors[:2].tolist(),
        documents=["first note", "second note"],
        metadatas=[{"k": 1}, {"k": 2}],
    )
    col.upsert(ids=["c", "d"], embeddings=vectors[2:])  # a numpy matrix
    again = guarded.get_collection("notes", embedding_function=None)
    again.update(ids="a", embeddings=vectors[3].tolist())  # one id, one flat embedding
    assert [type(c).__name__ for c in guarded.list_collections()] == ["GuardedChromaCollection"]
    stored = stored_chroma(chroma, "notes", ["a", "b", "c", "d"])
    np.testing.assert_allclose(stored["a"][0], vectors[3] + 0.25, atol=1e-6)
    np.testing.assert_allclose(stored["b"][0], vectors[1] + 0.25, atol=1e-6)
    np.testing.assert_allclose(stored["c"][0], vectors[2] + 0.25, atol=1e-6)
    np.testing.assert_allclose(stored["d"][0], vectors[3] + 0.25, atol=1e-6)
    assert stored["b"][1:] == ("second note", {"k": 2})
    assert col.count() == 4


def test_chroma_collection_fails_closed(chroma: Any) -> None:
    col = chroma.create_collection("notes", embedding_function=None)
    guarded = guard(col, FailsOnPoison(1.0))
    vectors = unit_rows(3, 8)
    guarded.add(ids=["x"], embeddings=vectors[:1])
    bad = vectors.copy()
    bad[2, 0] = POISON
    with pytest.raises(RecordError) as raised:
        guarded.add(ids=["p", "q", "r"], embeddings=bad, documents=["a", "b", "c"])
    assert raised.value.record_id == "r" and raised.value.field == "embeddings"
    with pytest.raises(VdbguardError, match="explicit embeddings"):
        guarded.add(ids=["s"], documents=["Chroma would embed this itself"])
    assert col.count() == 1
    guarded.update(ids=["x"], metadatas=[{"tag": "metadata only"}])  # no vector written: allowed
    assert col.get(ids=["x"])["metadatas"] == [{"tag": "metadata only"}]
    with pytest.raises(VdbguardError, match="nothing was written"):  # unmatched arguments never pass through raw
        guarded.add(ids=["t"], embeddings=vectors[:1], vectors=vectors[:1])
    assert col.count() == 1


def test_chroma_query_follows_a_space_changing_transform(chroma: Any) -> None:
    vectors = unit_rows(20, 8, seed=9)
    col = guard(chroma, Rotation(dim=8)).create_collection(
        "rot", embedding_function=None, configuration={"hnsw": {"space": "l2"}}
    )
    col.add(ids=[f"id{i}" for i in range(20)], embeddings=vectors)
    result = col.query(query_embeddings=[vectors[4].tolist()], n_results=1, include=["distances"])
    assert result["ids"] == [["id4"]] and result["distances"][0][0] == pytest.approx(0.0, abs=1e-5)
    with pytest.raises(VdbguardError, match="query_texts"):
        col.query(query_texts=["hello"], n_results=1)


def test_selective_policy_protects_only_flagged_records(chroma: Any) -> None:
    from vdbguard.detectors.presidio import PresidioDetector

    vectors = unit_rows(3, 8)
    col = guard(chroma, Offset(1.0), detector=PresidioDetector()).create_collection("sel", embedding_function=None)
    docs = [
        "Patient Jane Doe, born 1970-01-01, email jane.doe@example.com",
        "The quarterly report covers warehouse inventory levels.",
    ]
    metadatas = [{"k": 0}, {"k": 1}, {"text": "call me on +1 212 555 0199, ask for Maria Garcia"}]
    col.add(ids=["pii", "clean", "meta"], embeddings=vectors, documents=[*docs, ""], metadatas=metadatas)
    decisions = {d.record_id: d for d in col.last_decisions}
    assert decisions["pii"].protect and "EMAIL" in decisions["pii"].pii_types
    assert not decisions["clean"].protect
    assert decisions["meta"].protect  # no document, but the metadata text carries PII
    stored = stored_chroma(chroma, "sel", ["pii", "clean", "meta"])
    np.testing.assert_allclose(stored["pii"][0], vectors[0] + 1.0, atol=1e-6)
    np.testing.assert_allclose(stored["clean"][0], vectors[1], atol=1e-6)  # unflagged: stored unchanged
    np.testing.assert_allclose(stored["meta"][0], vectors[2] + 1.0, atol=1e-6)


def test_selective_policy_uses_vector_probes(qdrant: Any, embedder: Any, small_attacks: Any) -> None:
    """No stored text at all: the trained PII probe judges the vectors themselves."""
    from qdrant_client import models

    from vdbguard.detectors.base import Detector

    class NeverPii(Detector):
        name = "never"

        def detect(self, text: str) -> list:
            return []

    probe = [attack for attack in small_attacks if attack.name == "pii-probe"]
    texts = [
        "Contact John Smith at john.smith@gmail.com or call 555-123-4567",
        "The meeting agenda covers the quarterly budget review.",
    ]
    vectors = embedder.encode(texts)
    params = models.VectorParams(size=vectors.shape[1], distance=models.Distance.EUCLID)
    qdrant.create_collection("probed", vectors_config=params)
    guarded = guard(qdrant, Offset(1.0), policy=ProtectFlagged(NeverPii(), attacks=probe))
    guarded.upsert("probed", [models.PointStruct(id=i, vector=v.tolist()) for i, v in enumerate(vectors)])
    flagged, clean = guarded.last_decisions
    assert flagged.protect and "vector (pii-probe)" in flagged.reason and "EMAIL" in flagged.pii_types
    assert not clean.protect
    stored = stored_qdrant(qdrant, "probed", [0, 1])
    np.testing.assert_allclose(stored["0"].vector, vectors[0] + 1.0, atol=1e-6)
    np.testing.assert_allclose(stored["1"].vector, vectors[1], atol=1e-6)


def test_selective_policy_fails_closed_without_text(qdrant: Any) -> None:
    from qdrant_client import models

    from vdbguard.detectors.base import Detector

    class Broken(Detector):
        name = "broken"

        def detect(self, text: str) -> list:
            if "boom" in text:
                raise RuntimeError("detector crashed")
            return []

    guarded = guard(qdrant, Offset(1.0), detector=Broken())
    vectors = unit_rows(2, 8)
    guarded.upsert("plain", [models.PointStruct(id=1, vector=vectors[0].tolist(), payload={"n": 1})])
    assert guarded.last_decisions[0].protect  # no text to judge: protected anyway
    np.testing.assert_allclose(stored_qdrant(qdrant, "plain", [1])["1"].vector, vectors[0] + 1.0, atol=1e-6)
    with pytest.raises(RecordError) as raised:
        guarded.upsert("plain", [models.PointStruct(id=2, vector=vectors[1].tolist(), payload={"text": "boom"})])
    assert raised.value.record_id == "2" and raised.value.field == "text"
    assert qdrant.count("plain").count == 1

    class ShortSighted(Detector):  # reads 10 characters: a longer text's tail would go unexamined
        name = "short-sighted"
        max_chars = 10

        def detect(self, text: str) -> list:
            return []

    guarded = guard(qdrant, Offset(1.0), policy=ProtectFlagged(ShortSighted()))
    with pytest.raises(RecordError, match="examines at most 10") as raised:
        guarded.upsert("plain", [models.PointStruct(id=3, vector=vectors[1].tolist(), payload={"text": "x" * 11})])
    assert raised.value.record_id == "3" and qdrant.count("plain").count == 1


# -- Pinecone (official SDK against the REST double) -----------------------------------------------------


@pytest.fixture
def pinecone_index() -> Iterator[tuple[Any, Any]]:
    from pinecone import Pinecone, ServerlessSpec

    from tests.connectors.doubles.pinecone_rest import PineconeDouble

    double = PineconeDouble(api_key="pcsk-hooks-key").start()
    try:
        pc = Pinecone(api_key="pcsk-hooks-key", host=double.url)
        spec = ServerlessSpec(cloud="aws", region="us-east-1")
        pc.create_index(name="notes", dimension=8, metric="cosine", spec=spec)
        yield pc, double
    finally:
        double.stop()


def test_pinecone_upsert_tuples_dicts_and_vectors(pinecone_index: tuple[Any, Any]) -> None:
    from pinecone import Vector

    pc, _ = pinecone_index
    vectors = unit_rows(3, 8)
    index = guard(pc, Offset(0.5)).Index("notes")
    index.upsert(
        vectors=[
            ("t", vectors[0].tolist(), {"text": "tuple"}),
            {"id": "d", "values": vectors[1].tolist(), "metadata": {"text": "dict"}},
            Vector(id="v", values=vectors[2].tolist(), metadata={"text": "vector"}),
        ],
        namespace="ns",
    )
    index.update(id="d", values=vectors[0].tolist(), namespace="ns")
    fetched = pc.Index("notes").fetch(ids=["t", "d", "v"], namespace="ns").vectors
    np.testing.assert_allclose(fetched["t"].values, vectors[0] + 0.5, atol=1e-6)
    np.testing.assert_allclose(fetched["d"].values, vectors[0] + 0.5, atol=1e-6)
    np.testing.assert_allclose(fetched["v"].values, vectors[2] + 0.5, atol=1e-6)
    assert fetched["v"].metadata == {"text": "vector"}


def test_pinecone_fails_closed_and_query_follows_rotation(pinecone_index: tuple[Any, Any]) -> None:
    pc, double = pinecone_index
    vectors = unit_rows(10, 8, seed=4)
    bad = vectors.copy()
    bad[1, 0] = POISON
    writes = double.writes
    with pytest.raises(RecordError) as raised:
        guard(pc, FailsOnPoison(1.0)).Index("notes").upsert(vectors=[(f"r{i}", bad[i].tolist()) for i in range(3)])
    assert raised.value.record_id == "r1" and raised.value.field == "values"
    assert double.writes == writes  # no request reached the store
    with pytest.raises(VdbguardError, match="refused"):
        guard(pc, Offset(1.0)).Index("notes").upsert_records(records=[{"_id": "x", "text": "hi"}], namespace="ns")
    index = guard(pc, Rotation(dim=8)).Index("notes")
    index.upsert(vectors=[(f"r{i}", vectors[i].tolist()) for i in range(10)])
    match = index.query(vector=vectors[6].tolist(), top_k=1).matches[0]
    assert match.id == "r6" and match.score == pytest.approx(1.0, abs=1e-5)


# -- Weaviate (official v4 client against the gRPC/REST double) ------------------------------------------


@pytest.fixture
def weaviate_client() -> Iterator[tuple[Any, Any]]:
    import weaviate
    from weaviate.connect import ConnectionParams

    from tests.connectors.doubles.weaviate_server import WeaviateDouble

    double = WeaviateDouble()
    double.start()
    params = ConnectionParams.from_params("127.0.0.1", double.http_port, False, "127.0.0.1", double.grpc_port, False)
    client = weaviate.WeaviateClient(connection_params=params, skip_init_checks=True)
    client.connect()
    try:
        client.collections.create_from_dict(
            {"class": "Notes", "vectorizer": "none", "vectorIndexType": "hnsw", "vectorIndexConfig": {}}
        )
        yield client, double
    finally:
        client.close()
        double.stop()


def stored_weaviate(client: Any) -> dict[str, tuple[np.ndarray, dict[str, Any]]]:
    objects = client.collections.get("Notes").iterator(include_vector=True)
    return {str(o.uuid): (np.asarray(o.vector["default"]), o.properties) for o in objects}


def test_weaviate_insert_many_and_batches_are_protected(weaviate_client: tuple[Any, Any]) -> None:
    from weaviate.collections.classes.data import DataObject

    client, _ = weaviate_client
    vectors = unit_rows(4, 8)
    ids = [str(uuid.uuid5(uuid.NAMESPACE_URL, f"note-{i}")) for i in range(4)]
    guarded = guard(client, Offset(0.5))
    notes = guarded.collections.get("Notes")
    notes.data.insert_many([DataObject(properties={"text": "zero"}, uuid=ids[0], vector=vectors[0].tolist())])
    with notes.batch.fixed_size(batch_size=10) as batch:
        batch.add_object(properties={"text": "one"}, uuid=ids[1], vector=vectors[1].tolist())
    with notes.batch.dynamic() as batch:
        batch.add_object(properties={"text": "two"}, uuid=ids[2], vector=vectors[2])
    with guarded.batch.dynamic() as batch:  # the client-level, cross-collection batch
        batch.add_object(collection="Notes", properties={"text": "three"}, uuid=ids[3], vector=vectors[3].tolist())
    assert not notes.batch.failed_objects and not client.batch.failed_objects
    stored = stored_weaviate(client)
    for i, object_id in enumerate(ids):
        np.testing.assert_allclose(stored[object_id][0], vectors[i] + 0.5, atol=1e-6)
    assert stored[ids[1]][1] == {"text": "one"}


def test_weaviate_fails_closed(weaviate_client: tuple[Any, Any]) -> None:
    from weaviate.collections.classes.data import DataObject

    client, double = weaviate_client
    vectors = unit_rows(3, 8)
    vectors[1, 0] = POISON
    ids = [str(uuid.uuid5(uuid.NAMESPACE_URL, f"bad-{i}")) for i in range(3)]
    notes = guard(client, FailsOnPoison(1.0)).collections.get("Notes")
    writes = double.writes
    objects = [DataObject(properties={"text": str(i)}, uuid=ids[i], vector=vectors[i].tolist()) for i in range(3)]
    with pytest.raises(RecordError) as raised:
        notes.data.insert_many(objects)
    assert raised.value.record_id == ids[1]
    with pytest.raises(RecordError, match="missing"):
        notes.data.insert_many([{"text": "a server-side vectorizer would embed this"}])
    with pytest.raises(RecordError):
        notes.data.insert(properties={"text": "x"}, uuid=ids[1], vector=vectors[1].tolist())
    with pytest.raises(RecordError), notes.batch.dynamic() as batch:
        batch.add_object(properties={"text": "y"}, uuid=ids[1], vector=vectors[1].tolist())
    assert double.writes == writes and stored_weaviate(client) == {}


# -- LangChain and LlamaIndex embeddings ---------------------------------------------------------------


def test_langchain_embeddings_wrapper(embedder: Any) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.embeddings import Embeddings

    from vdbguard.hooks.langchain import GuardedEmbeddings

    class MiniLM(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embedder.encode(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return embedder.encode([text])[0].tolist()

    texts = ["a note about the weather", "a note about lunch"]
    raw = np.asarray(MiniLM().embed_documents(texts), dtype=np.float32)
    guarded = GuardedEmbeddings(MiniLM(), Offset(0.5))
    np.testing.assert_allclose(guarded.embed_documents(texts), raw + 0.5, atol=1e-6)
    np.testing.assert_allclose(guarded.embed_query(texts[0]), raw[0], atol=1e-6)  # same space: identity
    rotated = GuardedEmbeddings(MiniLM(), Rotation(dim=raw.shape[1]))
    docs, query = np.asarray(rotated.embed_documents(texts)), np.asarray(rotated.embed_query(texts[1]))
    assert int(np.argmax(docs @ query)) == 1 and float(docs[1] @ query) == pytest.approx(1.0, abs=1e-4)
    with pytest.raises(RecordError) as raised:
        GuardedEmbeddings(MiniLM(), FailsOnRow(raw[1])).embed_documents(texts)
    assert raised.value.record_id == "texts[1]" and raised.value.field == "embedding"


def test_llamaindex_embedding_wrapper(embedder: Any) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.base.embeddings.base import BaseEmbedding

    from vdbguard.hooks.llamaindex import GuardedEmbedding

    class MiniLM(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return embedder.encode([query])[0].tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return embedder.encode([text])[0].tolist()

    texts = ["a note about the weather", "a note about lunch", "a note about trains"]
    raw = np.asarray([MiniLM().get_text_embedding(t) for t in texts], dtype=np.float32)
    guarded = GuardedEmbedding(MiniLM(embed_batch_size=2), Offset(0.5))
    np.testing.assert_allclose(guarded.get_text_embedding_batch(texts), raw + 0.5, atol=1e-5)
    np.testing.assert_allclose(guarded.get_text_embedding(texts[2]), raw[2] + 0.5, atol=1e-5)
    np.testing.assert_allclose(guarded.get_query_embedding(texts[0]), raw[0], atol=1e-5)
    rotated = GuardedEmbedding(MiniLM(), Rotation(dim=raw.shape[1]))
    docs = np.asarray(rotated.get_text_embedding_batch(texts))
    query = np.asarray(rotated.get_query_embedding(texts[1]))
    assert int(np.argmax(docs @ query)) == 1
