"""store-summary.json and .md: a row per collection, the riskiest first, counts only, store names shown as text."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from tests.helpers import bare_summary
from tests.reports.test_markdown import HOSTILE, Rendered
from vdbguard.reports.markdown import visible
from vdbguard.reports.schema import Evidence, Finding, Report, Severity, Target
from vdbguard.reports.store_summary import StoreSummary, percent

HIGH, CRITICAL, MEDIUM, LOW = Severity.HIGH, Severity.CRITICAL, Severity.MEDIUM, Severity.LOW


def finding(record: str, severity: Severity, kind: str = "vector", namespace: str | None = None) -> Finding:
    evidence = Evidence(attack="pii-probe", pii_type="PERSON", score=0.9, threshold=0.5, detail="")
    return Finding(
        record_id=record,
        kind=kind,
        collection="c",
        namespace=namespace,
        severity=severity,
        pii_types=["PERSON"],
        evidence=[evidence],
    )


def report(collection: str, records: int, findings: list[Finding]) -> Report:
    from vdbguard.reports.schema import EmbedderInfo

    return Report(
        tool_version="0.1.0",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        target=Target(
            connector="chroma", collection=collection, location="store", dimension=4, count=records, metric=None
        ),
        embedder=EmbedderInfo(name="m", fingerprint="f", dimension=4),
        attacks=[],
        masked=True,
        summary=bare_summary(records, flagged=len({f.record_id for f in findings})),
        findings=findings,
        record_problems=[],
    )


def test_rows_count_records_per_kind_and_rank_the_riskiest_first(tmp_path: Path) -> None:
    summary = StoreSummary()
    summary.add(report("delta", 20, []), "s", tmp_path / "delta")
    summary.add(report("gamma", 50, [finding("g1", MEDIUM)]), "s", tmp_path / "gamma")
    leaks_twice = [finding("a1", HIGH), finding("a1", HIGH, "stored_text"), finding("a2", LOW)]
    summary.add(report("alpha", 100, leaks_twice), "s", tmp_path / "alpha")
    one_id_two_namespaces = [finding("b1", CRITICAL, namespace="ns-a"), finding("b1", MEDIUM, namespace="ns-b")]
    summary.add(report("beta", 10, one_id_two_namespaces), "s", tmp_path / "beta")
    summary.add(report("epsilon", 1000, [finding(f"e{i}", HIGH) for i in range(50)]), "s", tmp_path / "epsilon")
    document = summary.as_json()
    rows = {row["collection"]: row for row in document["collections"]}
    assert [row["collection"] for row in document["collections"]] == ["beta", "epsilon", "alpha", "gamma", "delta"]
    assert rows["alpha"]["records_with_findings"] == 2, "a record with two findings is one record"
    assert rows["alpha"]["records_with_findings_by_kind"] == {"vector": 2, "stored_text": 1}
    assert rows["alpha"]["records_high_or_critical"] == 1 and rows["alpha"]["sensitivity"] == 0.01
    assert rows["beta"]["records_with_findings"] == 2, "one id in two namespaces is two records"
    assert rows["beta"]["highest_severity"] == "critical" and rows["beta"]["sensitivity"] == 0.1
    assert rows["gamma"]["sensitivity"] == 0 and rows["gamma"]["highest_severity"] == "medium"
    assert rows["delta"]["highest_severity"] is None and rows["delta"]["records_with_findings"] == 0
    assert rows["epsilon"]["sensitivity"] == 0.05 and rows["epsilon"]["reports"] == str(tmp_path / "epsilon")
    totals = document["totals"]
    assert totals["collections"] == 5 and totals["collections_with_findings"] == 4
    assert totals["records_scanned"] == 1180 and totals["records_high_or_critical"] == 52
    assert totals["records_with_findings_by_kind"] == {"vector": 55, "stored_text": 1}
    assert totals["highest_severity"] == "critical"
    header, table = summary.table()
    assert header == ["collection", "records", "vector", "stored_text", "highest", "sensitivity"]
    assert table[0] == ["beta", "10", "2", "0", "critical", "10.00%"] and table[-1][-2:] == ["none", "0%"]
    written = summary.write(tmp_path)
    assert [path.name for path in written] == ["store-summary.json", "store-summary.md"]
    assert json.loads(written[0].read_text())["collections"] == document["collections"]


def test_a_kind_of_finding_not_known_yet_still_counts_in_a_column_of_its_own() -> None:
    summary = StoreSummary()
    summary.add(report("c", 10, [finding("r1", HIGH)]), "s", "c")
    summary.rows[0].flagged_by_kind["payload_secret"] = 1  # as a report holding such findings would count them
    assert summary.kinds() == ["vector", "stored_text", "payload_secret"]
    assert summary.table()[0][2:5] == ["vector", "stored_text", "payload_secret"]


def test_store_names_stay_text_in_the_markdown() -> None:
    """Collection names, store labels and locations are the store's own text: none adds markup or a table cell."""
    summary = StoreSummary()
    for index, name in enumerate(HOSTILE):
        hostile = report(name, 10 + index, [finding("r1", HIGH)])
        summary.add(
            hostile.model_copy(update={"target": hostile.target.model_copy(update={"location": name})}), name, name
        )
    rendered = Rendered(summary.markdown())
    assert not {"img", "script", "a", "iframe", "style", "h2", "ol", "ul", "blockquote"} & rendered.tag_names
    assert all(not attr.startswith("on") for _, attrs in rendered.tags for attr in attrs)
    (table,) = rendered.tables
    assert table == [8] * (len(HOSTILE) + 1), "one row per collection, no cell added or lost"
    shown = [visible(name) for name in HOSTILE]
    for name in shown:
        assert rendered.code.count(name) >= 3, name  # store, collection and reports folder; the location once more


def test_a_share_too_small_for_two_decimals_still_shows() -> None:
    assert [percent(share) for share in (0, 1e-6, 0.0001, 0.5)] == ["0%", "<0.01%", "0.01%", "50.00%"]
