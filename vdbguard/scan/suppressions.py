"""Accepted findings hidden from a report: a job file's suppressions and a baseline's, until they expire."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from vdbguard.config import Suppression
from vdbguard.reports.schema import STORED_TEXT, Finding, Report
from vdbguard.reports.spool import FindingSpool
from vdbguard.scan.state import restrict, suppression_key


def apply_suppressions(report: Report, suppressions: Sequence[Suppression]) -> tuple[Report, dict[str, list[str]]]:
    """The report without the PII types accepted for each record (a finding left with none is dropped), and
    ``suppression_key`` -> the types left open, for every finding a suppression touched."""
    open_types: dict[str, list[str]] = {}
    for finding in report.iter_findings():
        still_open = [
            t
            for t in finding.pii_types
            if not any(s.matches(finding.collection, finding.record_id, t) for s in suppressions)
        ]
        if len(still_open) != len(finding.pii_types):
            open_types[suppression_key(finding)] = still_open
    if not open_types:
        return report, open_types
    kept: list[Finding] | FindingSpool = [] if report.findings or not report.finding_count else FindingSpool()
    severities: Counter[str] = Counter()
    types: Counter[str] = Counter()
    for finding in report.iter_findings():
        restricted = restrict(finding, open_types)
        if restricted is not None:
            kept.append(restricted)
            severities[restricted.severity.value] += 1
            types.update(restricted.pii_types)
    stored = sum(1 for finding in kept if finding.kind == STORED_TEXT)
    summary = report.summary.model_copy(
        update={
            "records_flagged": len(kept) - stored,
            "stored_text_flagged": stored,
            "by_severity": dict(severities),
            "by_pii_type": dict(types),
        }
    )
    coverage = report.coverage and report.coverage.model_copy(update={"findings_suppressed": len(open_types)})
    update = {"summary": summary, "coverage": coverage}
    if isinstance(kept, list):
        return report.model_copy(update={**update, "findings": kept}), open_types
    return report.model_copy(update=update).spooled(kept), open_types
