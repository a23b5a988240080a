"""The loop a user runs on a store that leaks: `vdbguard scan`, then `vdbguard protect --transform redact`, then a
scan of every collection. Real sentences of other packages' documentation (the calibration split, which no attack
trained on) with names and other PII placed where real text carries them, embedded with MiniLM into embedded Chroma.

A collection redacted well holds too few records with PII to calibrate on: the loop must not fail for having
fixed the leak (it did: exit 2 after the copy was made)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vdbguard.cli import main
from vdbguard.cli.common import exit_code
from vdbguard.corpus.real import real_corpus
from vdbguard.records import VectorRecord
from vdbguard.reports.schema import Report, Severity
from vdbguard.reports.store_summary import JSON_FILE

RECORDS_WITH_PII, CLEAN_RECORDS = 180, 170  # past the 300 records with text that owner-side calibration needs


@pytest.fixture(scope="module")
def leaking_store(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:
    from vdbguard.connectors.chroma import ChromaConnector

    items = real_corpus(RECORDS_WITH_PII, CLEAN_RECORDS, seed=52, split="calibration")
    vectors = embedder.encode([item.text for item in items])
    records = [
        VectorRecord(id=f"note-{i:04d}", vector=vector, payload={"source": item.source}, text=item.text)
        for i, (item, vector) in enumerate(zip(items, vectors, strict=True))
    ]
    store = tmp_path_factory.mktemp("loop") / "store"
    with ChromaConnector(collection="notes", path=store, create=True) as connector:
        connector.upsert(records)
    return store


def run(*arguments: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(arguments))
    return result.exit_code, result.output


def person_findings(report: Report, at_least: Severity = Severity.MEDIUM) -> int:
    return sum(1 for f in report.iter_findings() if "PERSON" in f.pii_types and f.severity.rank >= at_least.rank)


def test_scan_then_redact_then_scan_every_collection(leaking_store: Path, model_cache: Path, tmp_path: Path) -> None:
    store = ["--connector", "chroma", "--path", str(leaking_store)]
    code, output = run("scan", *store, "--collection", "notes", "--out", str(tmp_path / "first"), "--fail-on", "medium")
    assert code == 1, output
    first = Report.model_validate_json((tmp_path / "first" / "report.json").read_text())
    assert first.verdict is not None and first.verdict.name == "owner", "the store keeps its text: calibrated on it"
    assert person_findings(first) >= 50, "names placed in real sentences are found"

    code, output = run(
        "protect", *store, "--collection", "notes", "--to-collection", "notes_safe", "--transform", "redact",
        "--out", str(tmp_path / "protect"), "--fail-on", "high",
    )  # fmt: skip
    assert code in (0, 1), output
    before, after = (
        Report.model_validate_json((tmp_path / "protect" / name / "report.json").read_text())
        for name in ("before", "after")
    )
    assert code == exit_code((f.severity for f in after.iter_findings()), "high"), (
        "protect's exit code follows --fail-on on the scan after"
    )
    assert "strength 0.4" in output and "records flagged before and after protection" in output
    assert person_findings(before) >= 50
    assert person_findings(after) <= 0.1 * person_findings(before), (person_findings(before), person_findings(after))
    assert after.verdict is not None and after.verdict.name == "packaged", "too clean to calibrate on: says so"
    assert "too few to fit a probe" in after.verdict.reason

    code, output = run("scan", *store, "--collection", "*", "--out", str(tmp_path / "all"), "--fail-on", "high")
    assert code in (0, 1), output
    summary = json.loads((tmp_path / "all" / JSON_FILE).read_text())
    assert {row["collection"] for row in summary["collections"]} == {"notes", "notes_safe"} and not summary["failed"]
    rows = {row["collection"]: row for row in summary["collections"]}
    assert rows["notes_safe"]["records_with_findings"] < rows["notes"]["records_with_findings"]
