"""What a scan says on the terminal: a line on its coverage and calibration, and the one JSON object `vdbguard scan
--json` prints on stdout, what a CI step reads instead of the table.

Counts, the exit code the command returns, where the reports are and the most severe findings. No recovered
value ever goes in it, masked or not: stdout ends up in CI logs that more people read than the reports.
"""

from __future__ import annotations

import heapq
import json
from collections import Counter
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from vdbguard import plugins
from vdbguard.credentials import safe_text
from vdbguard.errors import VdbguardError
from vdbguard.reports.base import strongest_evidence
from vdbguard.reports.schema import Coverage, Finding, OwnerCalibration, Report, Severity

SUMMARY_VERSION = 1
TOP_FINDINGS = 10


def report_paths(out: Path, formats: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Format name -> the file its writer writes into ``out``."""
    return {name: str(out / plugins.load("reports", name).filename) for name in formats}


def coverage_line(c: Coverage) -> str:
    """What the run attacked, carried over, sampled and deep-scanned, resolved and suppressed, in one line."""
    line = f"attacked {c.records_attacked} new or changed records, carried {c.records_carried_over} over"
    if c.fast_tier_sample < 1.0:
        line += f" (sample {c.fast_tier_sample:.0%} of new or changed)"
    if c.deep_attacks:
        line += f"; deep tier ({', '.join(c.deep_attacks)}) on {c.deep_records} records, "
        line += f"{c.deep_flagged_covered} of {c.deep_flagged_by_fast} flagged"
        line += " — budget used up" if c.deep_budget_exhausted else ""
    if c.findings_resolved:
        line += f"; {c.findings_resolved} findings resolved (records deleted)"
    return line + (f"; {c.findings_suppressed} suppressed" if c.findings_suppressed else "")


def calibration_line(c: OwnerCalibration) -> str:
    return (
        f"owner-side calibration on {c.records_labelled} labelled records: held-out recall {c.held_out_recall}, "
        f"false-positive rate {c.held_out_false_positive_rate} (target {c.target_false_positive_rate})"
    )


def _by_severity(counts: dict[str, int]) -> dict[str, int]:
    """Every severity, the worst first, zero where none: a consumer never has to guess a missing key."""
    return {s.value: counts.get(s.value, 0) for s in sorted(Severity, key=lambda s: s.rank, reverse=True)}


def _margin(finding: Finding) -> tuple[int, float]:
    best = strongest_evidence(finding)
    return finding.severity.rank, best.score - best.threshold


def _finding_entry(finding: Finding) -> dict[str, Any]:
    best = strongest_evidence(finding)
    return {
        "record_id": finding.record_id,
        "collection": finding.collection,
        "namespace": finding.namespace,
        "severity": finding.severity.value,
        "pii_types": finding.pii_types,
        "attack": best.attack,
        "evidence_pii_type": best.pii_type,
        "score": round(best.score, 4),
        "threshold": round(best.threshold, 4),
    }


def top_findings(report: Report, count: int) -> list[dict[str, Any]]:
    """The ``count`` most severe findings, the furthest over their threshold first (read as a stream)."""
    return [_finding_entry(f) for f in heapq.nlargest(count, report.iter_findings(), key=_margin)]


def scan_entry(report: Report, code: int, reports: dict[str, str], top: int, store: str | None) -> dict[str, Any]:
    s, t = report.summary, report.target
    return {
        "store": store,
        "connector": t.connector,
        "collection": t.collection,
        "location": t.location,
        "records_scanned": s.records_scanned,
        "records_flagged": s.records_flagged,
        "records_skipped": s.records_skipped,
        "by_severity": _by_severity(s.by_severity),
        "by_pii_type": dict(sorted(s.by_pii_type.items())),
        "findings_suppressed": report.coverage.findings_suppressed if report.coverage else 0,
        "exit_code": code,
        "reports": reports,
        "top_findings": top_findings(report, top),
    }


def _total(scans: list[dict[str, Any]], key: str) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for scan in scans:
        counts.update(scan[key])
    return dict(sorted(counts.items()))


def _error_entry(error: VdbguardError) -> dict[str, str | None]:
    return {"message": safe_text(error.message), "hint": None if error.hint is None else safe_text(error.hint)}


@dataclass
class JsonSummary:
    """The summary of one command: every collection it scanned, added as each finishes."""

    fail_on: str
    top: int = TOP_FINDINGS
    scans: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)

    def add(self, report: Report, code: int, reports: dict[str, str], store: str | None = None) -> None:
        self.scans.append(scan_entry(report, code, reports, self.top, store))

    def add_failure(self, store: str, collection: str, error: VdbguardError) -> None:
        """A collection of several whose scan failed (the others went on): exit code 2 for the command."""
        self.failed.append({"store": store, "collection": collection, "error": _error_entry(error)})

    def render(self, code: int, error: VdbguardError | None = None) -> str:
        """The whole summary as one line of JSON; ``error`` (with exit code 2) when the command failed."""
        summary = {
            "summary_version": SUMMARY_VERSION,
            "tool_version": version("vdbguard"),
            "exit_code": code,
            "fail_on": self.fail_on,
            "records_scanned": sum(scan["records_scanned"] for scan in self.scans),
            "records_flagged": sum(scan["records_flagged"] for scan in self.scans),
            "by_severity": _by_severity(_total(self.scans, "by_severity")),
            "by_pii_type": _total(self.scans, "by_pii_type"),
            "findings_suppressed": sum(scan["findings_suppressed"] for scan in self.scans),
            "scans": self.scans,
            "failed_collections": self.failed,
            "error": None if error is None else _error_entry(error),
        }
        return json.dumps(summary, ensure_ascii=False)
