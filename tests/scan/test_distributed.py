"""`scan --executor ray` on a local Ray cluster (2 CPUs) reports and keeps state exactly as the in-process scan."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from vdbguard.connectors.lancedb import LanceDBConnector

from vdbguard.cli import main
from vdbguard.records import Batch, VectorRecord
from vdbguard.scan import ScanSettings, ScanTarget, scan_collection

pytestmark = pytest.mark.slow(minutes=3)


class CrashingLanceDB(LanceDBConnector):
    """A real LanceDB connector whose process 'dies' after two pages."""

    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
        for served, batch in enumerate(super().iter_batches(batch_size, resume_from)):
            if served == 2:
                raise KeyboardInterrupt
            yield batch


def scan(path: Path, out: Path, state: Path, *extra: str) -> dict:
    arguments = ["scan", "--connector", "lancedb", "--path", str(path), "--collection", "notes", "--profile", "small"]
    arguments += ["--state", str(state), "--out", str(out), "--format", "json"]
    result = CliRunner().invoke(main, [*arguments, *extra])
    assert result.exit_code in (0, 1), result.output
    report = json.loads((out / "report.json").read_text())
    return {key: report[key] for key in ("summary", "findings", "record_problems", "coverage")}


DEEP = ["--deep-attack", "bag-of-words", "--deep-sample", "0.3", "--deep-max-records", "40"]


def test_ray_reports_what_the_in_process_scan_reports_first_scan_resume_and_rescan(
    lance_store: Path, embedder, small_attacks, tmp_path: Path
) -> None:
    """With the deep tier on, within a budget that runs out: the records a run leaves waiting for it are taken up by
    the next run in the same order by both executors."""
    ray = ["--executor", "ray", "--workers", "2"]
    alone = scan(lance_store, tmp_path / "a1", tmp_path / "a.sqlite", *DEEP, "--batch-size", "16")
    assert alone["findings"] and {p["record_id"] for p in alone["record_problems"]} == {"bad-nan", "bad-zero"}
    assert alone["coverage"]["deep_records"] == 40 and alone["coverage"]["deep_budget_exhausted"]

    # A run killed in-process after two pages is finished by Ray: nothing skipped, nothing counted twice.
    with pytest.raises(KeyboardInterrupt), CrashingLanceDB(collection="notes", path=lance_store) as crashing:
        settings = ScanSettings(
            profile="small",
            batch_size=16,
            state_path=tmp_path / "b.sqlite",
            deep_attack_names=("bag-of-words",),
            deep_budget=(0.3, 40, None),
        )
        scan_collection(crashing, ScanTarget("lancedb", str(lance_store)), settings, embedder=embedder)
    distributed = scan(lance_store, tmp_path / "b1", tmp_path / "b.sqlite", *ray, *DEEP, "--batch-size", "16")
    assert distributed == alone

    # The store changes: three records get another vector, two are deleted, one is new.
    with LanceDBConnector(collection="notes", path=lance_store) as store:
        records = [r for batch in store.iter_batches() for r in batch.records if not r.id.startswith("bad")]
        changed = [VectorRecord(id=r.id, vector=-r.vector, text=r.text, payload=r.payload) for r in records[:3]]
        store.upsert([*changed, VectorRecord(id="new", vector=records[5].vector, text="a new note")])
        store.delete([r.id for r in records[3:5]])
    alone = scan(lance_store, tmp_path / "a2", tmp_path / "a.sqlite", *DEEP, "--batch-size", "16")
    distributed = scan(lance_store, tmp_path / "b2", tmp_path / "b.sqlite", *ray, *DEEP, "--batch-size", "16")
    assert distributed == alone
    coverage = distributed["coverage"]
    assert coverage["records_in_collection"] == 121 and coverage["deep_records"] > 0
    assert coverage["records_attacked"] > 4, "the records the first run's deep budget left are attacked again"


def test_options_for_ray_alone_are_refused(lance_store: Path, tmp_path: Path) -> None:
    base = ["scan", "--connector", "lancedb", "--path", str(lance_store), "--collection", "notes"]
    result = CliRunner().invoke(main, [*base, "--out", str(tmp_path), "--workers", "3"])
    assert result.exit_code == 2 and "--executor ray" in result.output


def test_two_records_under_one_id_are_each_attacked_and_named_by_both_executors(
    embedder, small_attacks, tmp_path: Path
) -> None:
    """LanceDB keeps rows with equal ids: the second record read under an id is attacked and reported under its own
    id, named among the record problems and not counted as skipped, in-process and on Ray alike; a re-scan carries
    both."""
    import lancedb

    texts = [f"Ticket {i}: the printer on floor {i} jams again." for i in range(12)]
    texts.append("Send the invoice for Dr. Laura Mitchell to laura.mitchell@example.com.")
    vectors = embedder.encode(texts)
    path = tmp_path / "store"
    with LanceDBConnector(collection="notes", path=path) as store:
        store.ensure_collection(384)
        store.upsert([VectorRecord(id=f"t{i}", vector=vectors[i]) for i in range(12)])
    row = {"id": "t3", "vector": vectors[12].tolist(), "payload": "{}"}
    lancedb.connect(path).open_table("notes").add([row])  # a second record under t3
    ray = ["--executor", "ray", "--workers", "2"]
    alone = scan(path, tmp_path / "a", tmp_path / "a.sqlite")
    distributed = scan(path, tmp_path / "b", tmp_path / "b.sqlite", *ray)
    assert distributed == alone, "one loop reads for both: the same record keeps the plain id"
    assert alone["summary"]["records_scanned"] == 13 and alone["summary"]["records_skipped"] == 0
    (problem,) = alone["record_problems"]
    assert problem["field"] == "duplicate id" and problem["record_id"].startswith("t3#dup-")
    (leak,) = alone["findings"]
    assert leak["record_id"].startswith("t3"), "the invoice leaks, under whichever id it was read by"
    again = scan(path, tmp_path / "a", tmp_path / "a.sqlite")
    assert again["coverage"]["records_attacked"] == 0 and again["record_problems"] == alone["record_problems"]
