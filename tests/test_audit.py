"""`vdbguard audit`: raw vectors, vectors made from text their payload redacts, plain-http transport."""

from __future__ import annotations

import json
from pathlib import Path

import chromadb
import numpy as np
import pytest
from click.testing import CliRunner

from tests.faults.kill_resume import tree_digest
from vdbguard.audit import has_placeholder, transport_findings
from vdbguard.cli import main

pytestmark = pytest.mark.slow(minutes=2)

CLEAN = [
    "The printer on the third floor jams every morning.",
    "Please renew the license for the design software.",
    "Lunch is moved to the big meeting room on Thursday.",
    "Ticket closed: the VPN works again after the update.",
    "Call <PERSON> back about the invoice.",  # redacted, and embedded from the redacted text: fine
    "The backup of the wiki finished without errors.",
]
REDACTED_AFTER_EMBEDDING = {  # payload text -> the text the vector was really made from
    "Please call <PERSON> at <PHONE_NUMBER> about her biopsy.": "Please call Ana Souza at +55 11 5555 0101 about it.",
    "[REDACTED] asked for a copy of his payslip.": "Bjarni Gislason asked for a copy of his payslip.",
}
EDITED = ("Meeting moved to Friday.", "The quarterly budget review is cancelled until further notice.")


def _store(path: Path, embedder, dimension: int | None = None) -> None:
    """The notes store; with ``dimension``, vectors padded to it, as a model the audit cannot run would make."""
    texts = CLEAN + list(REDACTED_AFTER_EMBEDDING) + [EDITED[0]]
    sources = CLEAN + list(REDACTED_AFTER_EMBEDDING.values()) + [EDITED[1]]
    vectors = embedder.encode(sources)
    if dimension is not None:
        vectors = np.pad(vectors, ((0, 0), (0, dimension - vectors.shape[1])))
    collection = chromadb.PersistentClient(path=str(path)).create_collection("notes")
    collection.add(ids=[f"n{i}" for i in range(len(texts))], embeddings=vectors.tolist(), documents=texts)


def test_audit_finds_vectors_made_from_text_the_payload_redacts(embedder, tmp_path: Path) -> None:
    store = tmp_path / "store"
    _store(store, embedder)
    before = tree_digest(store)
    out = tmp_path / "audit" / "audit.json"
    args = ["audit", "--connector", "chroma", "--path", str(store), "--collection", "notes", "--out", str(out.parent)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output  # a high finding
    audit = json.loads(out.read_text())
    by_check = {(f["check"], f["severity"]): f for f in audit["findings"]}
    leaking = by_check["payload-vector consistency", "high"]
    assert sorted(leaking["record_ids"]) == ["n6", "n7"]
    assert by_check["payload-vector consistency", "low"]["record_ids"] == ["n8"]
    assert "6 of 9" in by_check["raw vectors", "medium"]["message"]
    assert audit["texts_checked"] == 9 and audit["notes"] == []
    assert "Souza" not in out.read_text() + result.output, "the audit shows ids and cosines, never text"
    assert tree_digest(store) == before


def test_audit_of_vectors_another_model_made_says_what_it_could_not_check(embedder, tmp_path: Path) -> None:
    store = tmp_path / "store"
    _store(store, embedder, dimension=768)
    args = ["audit", "--connector", "chroma", "--path", str(store), "--collection", "notes"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "not checked" in result.output and "768" in result.output


def test_placeholders_and_transport() -> None:
    assert has_placeholder("Call <PERSON> at <PHONE_NUMBER>") and has_placeholder("[REDACTED] called")
    assert not has_placeholder("Use <b>bold</b> and [1] citations") and not has_placeholder("a < b > c")
    assert transport_findings("http://db.internal:6333")[0].severity.value == "medium"
    assert transport_findings("https://db.internal:6333") == transport_findings("http://127.0.0.1:8000") == []
    assert transport_findings("/data/chroma") == []


def test_an_embedded_store_other_users_can_read_is_a_finding(embedder, tmp_path: Path) -> None:
    store = tmp_path / "store"
    _store(store, embedder)
    for path in (store, *store.rglob("*")):
        path.chmod(path.stat().st_mode | 0o004 | (0o001 if path.is_dir() else 0))
    args = ["audit", "--connector", "chroma", "--path", str(store), "--collection", "notes", "--fail-on", "never"]
    out = tmp_path / "open" / "audit.json"
    assert CliRunner().invoke(main, [*args, "--out", str(out.parent)]).exit_code == 0
    (access,) = [f for f in json.loads(out.read_text())["findings"] if f["check"] == "access"]
    assert access["severity"] == "medium" and "chmod -R o-rwx" in access["fix"]
    for path in (store, *store.rglob("*")):
        path.chmod(path.stat().st_mode & ~0o007)
    assert CliRunner().invoke(main, [*args, "--out", str(out.parent)]).exit_code == 0
    assert [f for f in json.loads(out.read_text())["findings"] if f["check"] == "access"] == []


def test_a_server_that_serves_vectors_without_credentials_is_a_high_finding(tmp_path: Path) -> None:
    """The real qdrant-client against the REST double, once with API keys required and searches that return
    vectors, once with no key and searches that do not (as behind a proxy that strips them)."""
    from qdrant_client import QdrantClient, models

    from tests.connectors.doubles.qdrant_rest import QdrantRestDouble

    for api_key, expected, query_vectors in (("audit-key-7f3a", [], True), (None, ["high"], False)):
        double = QdrantRestDouble(api_key=api_key, query_vectors=query_vectors)
        url = double.start()
        try:
            client = QdrantClient(url=url, api_key=api_key, check_compatibility=False)
            client.create_collection("notes", vectors_config=models.VectorParams(size=4, distance=models.Distance.DOT))
            client.upsert("notes", [models.PointStruct(id=1, vector=[0.1, 0.2, 0.3, 0.4], payload={"text": "hi"})])
            args = ["audit", "--connector", "qdrant", "--url", url, "--collection", "notes", "--fail-on", "never"]
            args += ["--option", f"api_key={api_key}"] if api_key else []
            out = tmp_path / "audit" / "audit.json"
            result = CliRunner().invoke(main, [*args, "--out", str(out.parent)])
            assert result.exit_code == 0, result.output
            audit = json.loads(out.read_text())
            assert [f["severity"] for f in audit["findings"] if f["check"] == "access"] == expected
            assert not [n for n in audit["notes"] if "unauthenticated" in n or "search" in n]
            searches = [f["severity"] for f in audit["findings"] if f["check"] == "query endpoint"]
            assert searches == (["low"] if query_vectors else [])
            assert api_key is None or api_key not in out.read_text() + result.output
        finally:
            double.stop()


def _human_lines(n: int) -> list[str]:
    """Lines of chatterbot-corpus conversations: real text nobody on the project wrote."""
    import chatterbot_corpus
    import yaml

    folder = Path(chatterbot_corpus.__file__).parent / "data" / "english"
    lines: list[str] = []
    for path in sorted(folder.glob("*.yml")):
        for conversation in yaml.safe_load(path.read_text(encoding="utf-8")).get("conversations", []):
            lines += [t for t in conversation if isinstance(t, str) and len(t.split()) >= 4]
    return list(dict.fromkeys(lines))[:n]


def test_transform_strength_a_keyed_rotation_is_undone_by_alignment_and_heavy_noise_is_not(
    embedder, tmp_path: Path
) -> None:
    from vdbguard.transforms.gaussian import GaussianNoise
    from vdbguard.transforms.rotation import SecretRotation

    texts = _human_lines(600)
    raw = embedder.encode(texts)
    severities = {}
    transforms = {"rotation": SecretRotation(key="audit-test-key-" + "0" * 32), "noise": GaussianNoise(0.2, seed=1)}
    for name, transform in transforms.items():
        store = tmp_path / name
        collection = chromadb.PersistentClient(path=str(store)).create_collection("notes")
        vectors = transform.apply(raw)
        collection.add(ids=[f"n{i}" for i in range(len(texts))], embeddings=vectors.tolist(), documents=texts)
        out = tmp_path / f"{name}-audit" / "audit.json"
        args = ["audit", "--connector", "chroma", "--path", str(store), "--collection", "notes", "--fail-on", "never"]
        assert CliRunner().invoke(main, [*args, "--out", str(out.parent)]).exit_code == 0
        audit = json.loads(out.read_text())
        found = [f for f in audit["findings"] if f["check"] == "transform strength"]
        severities[name] = (found[0]["severity"], found[0]["evidence"]["held_out_median_cosine"]) if found else None
        if not found:
            assert any("alignment does not undo" in note for note in audit["notes"])
    assert severities["rotation"] is not None and severities["rotation"][0] == "high", severities
    assert severities["noise"] is None or severities["noise"][0] != "high", severities


def test_pinecone_and_weaviate_searches_that_return_values_are_found(tmp_path: Path) -> None:
    """The vendors' own clients against the doubles: include_values / include_vector hand back stored vectors."""
    from vdbguard.connectors.pinecone import PineconeConnector
    from vdbguard.connectors.weaviate import WeaviateConnector

    from tests.connectors.doubles.pinecone_rest import PineconeDouble
    from tests.connectors.doubles.weaviate_server import WeaviateDouble
    from vdbguard.records import VectorRecord

    records = [
        VectorRecord(f"00000000-0000-0000-0000-00000000000{i}", np.eye(4, dtype=np.float32)[i]) for i in range(4)
    ]
    with PineconeDouble(api_key="pcsk-audit") as pinecone, WeaviateDouble() as weaviate:
        stores = {
            "pinecone": (PineconeConnector, {"url": pinecone.url, "api_key": "pcsk-audit"}),
            "weaviate": (WeaviateConnector, {"url": weaviate.url, "grpc_port": weaviate.grpc_port}),
        }
        for name, (connector_class, options) in stores.items():
            collection = "notes" if name == "pinecone" else "Notes"  # Pinecone: lower case; Weaviate: upper first
            with connector_class(collection=collection, **options) as writer:
                writer.ensure_collection(4, "cosine")
                writer.upsert(records)
            args = ["audit", "--connector", name, "--url", options.pop("url"), "--collection", collection]
            for key, value in options.items():
                args += ["--option", f"{key}={value}"]
            out = tmp_path / f"{name}-audit" / "audit.json"
            result = CliRunner().invoke(main, [*args, "--fail-on", "never", "--out", str(out.parent)])
            assert result.exit_code == 0, result.output
            audit = json.loads(out.read_text())
            assert [f["severity"] for f in audit["findings"] if f["check"] == "query endpoint"] == ["low"], name
            assert not [n for n in audit["notes"] if "search" in n], name
            assert "pcsk-audit" not in out.read_text() + result.output


def test_with_the_owners_key_a_rotation_is_measured_against_the_adaptive_attacker(
    embedder, model_cache: Path, tmp_path: Path, monkeypatch
) -> None:
    """The owner's key reproduces the stored vectors, so the audit measures the rotation on the store's own (real)
    text: the attacker retrained on rotated vectors reads them as well as raw ones. A wrong key is caught first."""
    from tests.evaluate.test_defense import KEY
    from vdbguard.transforms.keyed import KEY_ENV
    from vdbguard.transforms.rotation import SecretRotation

    texts = _human_lines(60)
    store = tmp_path / "store"
    collection = chromadb.PersistentClient(path=str(store)).create_collection("notes")
    vectors = SecretRotation(key=KEY).apply(embedder.encode(texts))
    collection.add(ids=[f"n{i}" for i in range(len(texts))], embeddings=vectors.tolist(), documents=texts)
    before = tree_digest(store)
    args = ["audit", "--connector", "chroma", "--path", str(store), "--collection", "notes", "--fail-on", "never"]
    args += ["--transform", "rotation", "--strength", "1", "--attack", "bag-of-words", "--profile", "small"]
    args += ["--attack-limit", "20"]
    needs_fit = CliRunner().invoke(main, [*args[:9], "--transform", "pca", "--strength", "64"])
    assert needs_fit.exit_code == 2 and "--fit-file" in needs_fit.output
    for key, measured in ((KEY, True), ("not-the-key-" + "9" * 32, False)):
        monkeypatch.setenv(KEY_ENV, key)
        out = tmp_path / "audit" / "audit.json"
        result = CliRunner().invoke(main, [*args, "--out", str(out.parent)])
        assert result.exit_code == 0, result.output
        audit = json.loads(out.read_text())
        found = [f for f in audit["findings"] if f["check"] == "transform strength (owner's key)"]
        if measured:
            assert [f["severity"] for f in found] == ["high"], audit["notes"]
            evidence = found[0]["evidence"]
            assert evidence["reproduced_median_cosine"] > 0.99 and evidence["attacked_records"] == 20  # of 60
            assert evidence["leakage_protected_adaptive"] >= 0.5 * evidence["leakage_clean"] > 0
        else:
            assert not found and any("does not reproduce the stored vectors" in n for n in audit["notes"])
        assert key not in out.read_text() + result.output
    assert tree_digest(store) == before


def test_without_text_the_vectors_statistics_tell_raw_output_from_a_rotation(embedder, tmp_path: Path) -> None:
    """Stores that keep no text: held-out chatterbot lines (never the reference lines) embedded raw are found raw
    by their statistics alone; the same vectors under a keyed rotation are not."""
    from vdbguard.corpus.human import human_sentences
    from vdbguard.transforms.rotation import SecretRotation

    raw = embedder.encode(human_sentences("holdout")[:200])
    for name, vectors in (("raw", raw), ("rotated", SecretRotation(key="audit-stats-key-" + "1" * 32).apply(raw))):
        store = tmp_path / name
        collection = chromadb.PersistentClient(path=str(store)).create_collection("notes")
        collection.add(ids=[f"n{i}" for i in range(len(vectors))], embeddings=np.asarray(vectors).tolist())
        out = tmp_path / f"{name}-audit" / "audit.json"
        args = ["audit", "--connector", "chroma", "--path", str(store), "--collection", "notes", "--fail-on", "never"]
        assert CliRunner().invoke(main, [*args, "--out", str(out.parent)]).exit_code == 0
        audit = json.loads(out.read_text())
        found = [f for f in audit["findings"] if f["check"] == "raw vectors"]
        if name == "raw":
            assert [f["severity"] for f in found] == ["medium"]
            assert found[0]["evidence"]["mean_direction_cosine"] >= 0.9
        else:
            assert not found and any("not all-MiniLM-L6-v2's raw output" in n for n in audit["notes"]), audit["notes"]
