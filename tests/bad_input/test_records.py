"""Records a store can hold but the scan cannot attack are reported by id and field, and the scan goes on:
sparse-only and multi-vector points in Qdrant (local mode, the real engine), NaN, infinite, zero and
wrong-dimension vectors, integer and UUID ids, and an empty collection."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from vdbguard.cli import main

models = pytest.importorskip("qdrant_client.models")


def _scan(store: Path, out: Path) -> dict:
    args = ["scan", "--connector", "qdrant", "--path", str(store), "--collection", "tickets", "--profile", "small"]
    args += ["--option", "vector_name=text", "--owner-calibration", "off", "--out", str(out), "--format", "json"]
    result = CliRunner().invoke(main, [*args, "--fail-on", "never"])
    assert result.exit_code == 0, result.output
    return json.loads((out / "report.json").read_text())


def test_points_without_the_scanned_vector_or_with_broken_ones_are_named_and_the_rest_scanned(
    embedder, small_attacks, tmp_path: Path
) -> None:
    from qdrant_client import QdrantClient

    texts = [f"Ticket {i}: the printer on floor {i} jams again." for i in range(12)]
    vectors = embedder.encode(texts)
    client = QdrantClient(path=str(tmp_path / "store"))
    client.create_collection(
        "tickets",
        vectors_config={
            "text": models.VectorParams(size=384, distance=models.Distance.COSINE),
            "colbert": models.VectorParams(
                size=8,
                distance=models.Distance.COSINE,
                multivector_config=models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM),
            ),
        },
        sparse_vectors_config={"keywords": models.SparseVectorParams()},
    )
    good = [
        models.PointStruct(id=i, vector={"text": vectors[i].tolist()}, payload={"text": texts[i]}) for i in range(10)
    ]
    uuid_id = str(uuid.UUID(int=2**100))
    odd = [
        models.PointStruct(id=uuid_id, vector={"text": vectors[10].tolist()}, payload={"text": texts[10]}),
        models.PointStruct(id=100, vector={"keywords": models.SparseVector(indices=[1, 7], values=[0.5, 0.2])}),
        models.PointStruct(id=101, vector={"colbert": [[0.1] * 8, [0.2] * 8]}),
        models.PointStruct(id=102, vector={"text": vectors[11].tolist(), "colbert": [[0.3] * 8]}),
        models.PointStruct(id=103, vector={"text": np.zeros(384).tolist()}),
    ]
    client.upsert("tickets", [*good, *odd])
    client.close()

    report = _scan(tmp_path / "store", tmp_path / "out")
    problems = {p["record_id"]: (p["field"], p["problem"]) for p in report["record_problems"]}
    assert problems["100"][0] == "vector" and "is missing" in problems["100"][1]
    assert problems["101"] == (
        "vector",
        "is missing (the record holds only colbert: the connector's vector_name picks one)",
    )
    assert problems["103"] == ("vector", "is all zeros (a placeholder?): nothing to attack")
    assert set(problems) == {"100", "101", "103"}, "the UUID id and the point with both vectors are scanned"
    assert report["summary"]["records_scanned"] == len(good) + len(odd)
    assert report["summary"]["records_skipped"] == len(problems)


def test_an_empty_collection_is_a_clean_report(small_attacks, tmp_path: Path) -> None:
    from qdrant_client import QdrantClient

    client = QdrantClient(path=str(tmp_path / "store"))
    client.create_collection("tickets", vectors_config={"text": models.VectorParams(size=384, distance="Cosine")})
    client.close()
    report = _scan(tmp_path / "store", tmp_path / "out")
    assert report["summary"]["records_scanned"] == 0 and report["findings"] == [] and report["record_problems"] == []


@pytest.mark.parametrize("out", ["/proc/vdbguard-out", "a-file/out"])
def test_an_output_folder_that_cannot_be_written_stops_the_scan_before_it_starts(tmp_path: Path, out: str) -> None:
    """Root writes through permission bits, so the folders are ones nobody can write: /proc, and under a file."""
    (tmp_path / "a-file").write_text("not a folder")
    target = Path(out) if out.startswith("/") else tmp_path / out
    state = tmp_path / "scan.sqlite"
    args = ["scan", "--connector", "qdrant", "--path", str(tmp_path / "no-store"), "--collection", "tickets"]
    result = CliRunner().invoke(main, [*args, "--out", str(target), "--state", str(state)])
    assert result.exit_code == 2 and "cannot write to --out" in result.output, result.output
    assert "nothing was scanned" in result.output and not state.exists()
    elsewhere = tmp_path / "out"
    result = CliRunner().invoke(main, [*args, "--out", str(elsewhere), "--state", str(target / "scan.sqlite")])
    assert result.exit_code == 2 and "cannot write to the --state folder" in result.output, result.output
    assert "nothing was scanned" in result.output and "resume" not in result.output
