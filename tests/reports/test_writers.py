"""The csv and sarif writers: neutralised formulas, masking kept (always, in SARIF), warnings when unmasked,
schema-valid SARIF."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import jsonschema
import pytest

from tests.helpers import make_evidence, make_finding
from vdbguard.errors import VdbguardError
from vdbguard.reports import write_reports
from vdbguard.reports.csv_report import UNMASKED_WARNING, render_csv
from vdbguard.reports.sarif import fingerprint, render_sarif
from vdbguard.reports.schema import (
    EmbedderInfo,
    Finding,
    Report,
    Severity,
    Summary,
    Target,
)

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())
FORMULA = '=HYPERLINK("http://x","Jane")'  # doc-2's recovered value: a spreadsheet would run it


def make_report(masked: bool = True) -> Report:
    evidence = partial(make_evidence, masked=masked)
    findings = [
        Finding(
            record_id="doc-1",
            collection="notes",
            severity=Severity.CRITICAL,
            pii_types=["EMAIL", "PERSON"],
            evidence=[
                evidence("pii-probe", "PERSON", 0.9, 0.5, "John Smith"),
                evidence("fused", "EMAIL", 0.95, 0.9),
            ],
            confirmed_by_source={"EMAIL": True, "PERSON": False},
        ),
        make_finding(
            "doc-2", Severity.MEDIUM, evidence("bag-of-words", "PERSON", 0.7, 0.6, FORMULA), namespace="tenant-a"
        ),
        make_finding("doc-3", Severity.LOW, evidence("pii-probe", "PHONE", 0.55, 0.5, "555-0100")),
    ]
    return Report(
        tool_version="0.1.0",
        created_at=datetime(2025, 1, 1, tzinfo=UTC),
        target=Target(connector="chroma", collection="notes", location="./db", dimension=384, count=10, metric=None),
        embedder=EmbedderInfo(name="all-MiniLM-L6-v2", fingerprint="abc", dimension=384),
        attacks=[],
        masked=masked,
        summary=Summary(
            records_scanned=10,
            records_flagged=3,
            records_skipped=0,
            by_severity={"critical": 1, "medium": 1, "low": 1},
            by_pii_type={"PERSON": 2, "EMAIL": 1, "PHONE": 1},
            records_with_source_text=1,
            source_pii_records=1,
            source_pii_flagged=1,
        ),
        findings=findings,
        record_problems=[],
    )


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(text.splitlines()))


def test_csv_one_row_per_finding_masked_and_formulas_neutralised() -> None:
    text = render_csv(make_report())
    assert not text.startswith("#")
    rows = csv_rows(text)
    assert [r["record_id"] for r in rows] == ["doc-1", "doc-2", "doc-3"]
    first, second, third = rows
    assert first["pii_types"] == "EMAIL;PERSON"
    assert first["attack"] == "pii-probe"  # 0.4 over its threshold beats fused's 0.05
    assert first["recovered"] == "J*** S****"
    assert first["confirmed_by_source"] == "EMAIL:yes;PERSON:no"
    assert second["namespace"] == "tenant-a"
    assert second["recovered"].startswith("'=")
    assert third["recovered"] == "***-****"
    assert third["confirmed_by_source"] == "n/a"


def test_csv_unmasked_carries_warning_first() -> None:
    lines = render_csv(make_report(masked=False)).splitlines()
    assert lines[0] == UNMASKED_WARNING
    rows = csv_rows("\n".join(lines[1:]))
    assert rows[0]["recovered"] == "John Smith"
    assert rows[1]["recovered"] == "'" + FORMULA


def test_sarif_validates_against_the_official_schema() -> None:
    for masked in (True, False):
        log = json.loads(render_sarif(make_report(masked)))
        validator = jsonschema.validators.validator_for(SCHEMA)
        validator.check_schema(SCHEMA)
        validator(SCHEMA, format_checker=validator.FORMAT_CHECKER).validate(log)


def test_sarif_content() -> None:
    run = json.loads(render_sarif(make_report()))["runs"][0]
    assert run["tool"]["driver"]["name"] == "vdbguard"
    rules = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert rules == ["vdbguard/pii/PERSON/critical", "vdbguard/pii/PERSON/medium", "vdbguard/pii/PHONE/low"]
    results = run["results"]
    assert [r["level"] for r in results] == ["error", "warning", "note"]
    assert [rules[r["ruleIndex"]] for r in results] == [r["ruleId"] for r in results]
    assert "J*** S****" in results[0]["message"]["text"]
    assert "John" not in json.dumps(run)
    names = [r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] for r in results]
    assert names == ["chroma://notes/doc-1", "chroma://notes/tenant-a/doc-2", "chroma://notes/doc-3"]
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results} == {
        "vdbguard/chroma/notes"
    }
    assert "warning" not in run["properties"]


def test_sarif_fingerprints_stable_and_distinct() -> None:
    def prints(report: Report) -> list[str]:
        results = json.loads(render_sarif(report))["runs"][0]["results"]
        return [r["partialFingerprints"]["vdbguardRecord/v1"] for r in results]

    first, again = prints(make_report()), prints(make_report(masked=False))
    assert first == again
    assert len(set(first)) == 3
    report = make_report()
    assert fingerprint(report, report.findings[0]) != fingerprint(
        report, report.findings[0].model_copy(update={"pii_types": ["PERSON"]})
    )


def test_sarif_unmasked_carries_warning() -> None:
    """An unmasked report's SARIF warns that the other reports hold PII, and masks recovered values itself."""
    run = json.loads(render_sarif(make_report(masked=False)))["runs"][0]
    assert "--show-pii" in run["properties"]["warning"] and run["properties"]["masked"] is True
    assert "John Smith" not in json.dumps(run) and "J*** S****" in run["results"][0]["message"]["text"]


def test_write_reports_all_formats(tmp_path: Path) -> None:
    paths = write_reports(make_report(), tmp_path, ["json", "md", "csv", "sarif"])
    assert sorted(p.name for p in paths) == ["report.csv", "report.json", "report.md", "report.sarif"]
    assert all(p.stat().st_size > 0 for p in paths)


def test_unknown_format_refused_before_writing(tmp_path: Path) -> None:
    with pytest.raises(VdbguardError, match="unknown report 'xlsx'"):
        write_reports(make_report(), tmp_path, ["json", "csv", "xlsx"])
    assert list(tmp_path.iterdir()) == []


def test_spooled_findings_write_byte_identical_reports_in_every_format(tmp_path: Path) -> None:
    """A report of many findings streams them from disk (memory does not grow with findings); every writer
    gives the same bytes as from the list, ties in severity and score kept in the same order."""
    from vdbguard.reports.spool import FindingSpool

    report = make_report(masked=False)
    many = [f.model_copy(update={"record_id": f"{f.record_id}-{i:04d}"}) for i in range(1700) for f in report.findings]
    in_memory = report.model_copy(update={"findings": many})
    spool = FindingSpool(f.model_dump_json() for f in many)
    spooled = in_memory.spooled(spool)
    assert spooled.findings == [] and spooled.finding_count == len(many) == len(list(spooled.iter_findings()))
    formats = ["json", "md", "html", "sarif", "csv"]
    for name, which in (("memory", in_memory), ("spool", spooled)):
        (tmp_path / name).mkdir()
        write_reports(which, tmp_path / name, formats)
    for path in (tmp_path / "memory").iterdir():
        assert path.read_bytes() == (tmp_path / "spool" / path.name).read_bytes(), path.name
    assert len(json.loads((tmp_path / "spool" / "report.json").read_text())["findings"]) == len(many)


def test_suppressions_on_a_spooled_report_stream_and_match_the_in_memory_result() -> None:
    """A job's accepted findings are taken out of a spooled report without loading it: same findings, same counts."""
    from datetime import date

    from vdbguard.config import Suppression
    from vdbguard.reports.spool import FindingSpool
    from vdbguard.scan.suppressions import apply_suppressions

    report = make_report()
    many = [f.model_copy(update={"record_id": f"{f.record_id}-{i:03d}"}) for i in range(50) for f in report.findings]
    in_memory = report.model_copy(update={"findings": many})
    spooled = in_memory.spooled(FindingSpool(f.model_dump_json() for f in many))
    accepted = [
        Suppression(record_id="doc-1-*", pii_type="EMAIL", reason="test account", owner="qa", expires=date(2099, 1, 1)),
        Suppression(record_id="doc-3-*", reason="public number", owner="qa", expires=date(2099, 1, 1)),
    ]
    kept, open_types = apply_suppressions(in_memory, accepted)
    streamed, streamed_types = apply_suppressions(spooled, accepted)
    assert streamed.findings == [] and list(streamed.iter_findings()) == kept.findings
    assert streamed.summary == kept.summary and streamed_types == open_types
    assert kept.summary.records_flagged == 100 and kept.summary.by_pii_type == {"PERSON": 100}
