"""`--baseline`: an earlier report.json or a suppression list, applied as a job file's suppressions are."""

from __future__ import annotations

import json
import time
from datetime import date
from pathlib import Path

import pytest

from tests.helpers import suppression
from tests.reports.test_writers import make_report
from vdbguard.baseline import BaselineSuppression, load_baseline
from vdbguard.errors import VdbguardError
from vdbguard.reports.sarif import render_sarif
from vdbguard.reports.schema import Evidence, Report
from vdbguard.scan.suppressions import apply_suppressions


def baseline_of(report: Report, path: Path) -> Path:
    path.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    return path


def test_a_reports_findings_are_accepted_per_collection_record_and_type(tmp_path: Path) -> None:
    before = make_report()
    (baseline,) = load_baseline(baseline_of(before, tmp_path / "report.json"))
    assert isinstance(baseline, BaselineSuppression) and baseline.accepted == 4  # doc-1 leaks two types

    doc1 = before.findings[0]
    new_type = Evidence(attack="pii-probe", pii_type="SSN", score=0.9, threshold=0.5, detail="")
    grown = doc1.model_copy(update={"pii_types": [*doc1.pii_types, "SSN"], "evidence": [*doc1.evidence, new_type]})
    new_record = doc1.model_copy(update={"record_id": "doc-9"})
    now = before.model_copy(update={"findings": [grown, *before.findings[1:], new_record]})
    kept, open_types = apply_suppressions(now, [baseline])
    assert [(f.record_id, f.pii_types) for f in kept.findings] == [
        ("doc-1", ["SSN"]),  # the type it newly leaks stays open
        ("doc-9", ["EMAIL", "PERSON"]),
    ]
    assert kept.findings[0].evidence == [new_type]
    assert kept.summary.records_flagged == 2 and open_types == {"doc-1": ["SSN"], "doc-2": [], "doc-3": []}

    elsewhere = [f.model_copy(update={"collection": "other"}) for f in before.findings]
    untouched, _ = apply_suppressions(before.model_copy(update={"findings": elsewhere}), [baseline])
    assert untouched.findings == elsewhere, "another collection's findings under the same ids stay open"


def test_record_ids_are_matched_as_written_never_as_globs(tmp_path: Path) -> None:
    report = make_report()
    globbed = report.model_copy(update={"findings": [report.findings[2].model_copy(update={"record_id": "doc-[3]*"})]})
    (baseline,) = load_baseline(baseline_of(globbed, tmp_path / "report.json"))
    kept, _ = apply_suppressions(report, [baseline])
    assert [f.record_id for f in kept.findings] == ["doc-1", "doc-2", "doc-3"]


def test_a_large_baseline_is_applied_in_linear_time(tmp_path: Path) -> None:
    report = make_report()
    many = [f.model_copy(update={"record_id": f"{f.record_id}-{i:05d}"}) for i in range(7_000) for f in report.findings]
    big = report.model_copy(update={"findings": many})
    (baseline,) = load_baseline(baseline_of(big, tmp_path / "report.json"))
    started = time.monotonic()
    kept, _ = apply_suppressions(big, [baseline])
    assert kept.findings == [] and kept.summary.records_flagged == 0
    assert time.monotonic() - started < 30, "21,000 findings against 28,000 accepted: one look-up each"


def test_a_suppression_list_in_the_job_files_form(tmp_path: Path) -> None:
    listed = tmp_path / "accepted.toml"
    listed.write_text(
        suppression("doc-1", "test account", date(2099, 1, 1), pii_type="email")
        + suppression("doc-*", "old", date(2000, 1, 1), collection="notes"),
        encoding="utf-8",
    )
    active, expired = load_baseline(listed)
    assert (active.record_id, active.pii_type and active.pii_type.value) == ("doc-1", "EMAIL")
    assert str(expired.expires) == "2000-01-01"
    as_json = tmp_path / "accepted.json"
    as_json.write_text(json.dumps({"suppressions": [active.model_dump(mode="json")]}), encoding="utf-8")
    assert load_baseline(as_json) == [active]


@pytest.mark.parametrize(
    ("content", "name", "expected"),
    [
        ("not json", "report.json", "is not valid JSON"),
        ("[[suppressions]]\nrecord_id = 3\n", "list.toml", "suppressions.0"),
        ('{"findings": [{"record_id": "a"}], "schema_version": "1.5"}', "report.json", "has a finding without"),
        ('{"suppressions": []}', "list.json", None),
        ('{"version": "2.1.0", "runs": []}', "report.sarif", "is a SARIF log"),
    ],
)
def test_a_baseline_that_is_not_one_is_a_clear_error(
    tmp_path: Path, content: str, name: str, expected: str | None
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    if expected is None:
        assert load_baseline(path) == []
        return
    with pytest.raises(VdbguardError, match=expected) as refused:
        load_baseline(path)
    assert refused.value.hint and "report.json" in refused.value.hint


def test_the_sarif_of_a_baselined_report_holds_only_the_new_findings(tmp_path: Path) -> None:
    report = make_report()
    older = report.model_copy(update={"findings": report.findings[:2]})
    (baseline,) = load_baseline(baseline_of(older, tmp_path / "report.json"))
    kept, _ = apply_suppressions(report, [baseline])
    results = json.loads(render_sarif(kept))["runs"][0]["results"]
    assert [r["locations"][0]["logicalLocations"][0]["name"] for r in results] == ["doc-3"]
