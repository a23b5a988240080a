"""report.csv: one row per finding, for spreadsheets and ticket imports."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import ClassVar

from vdbguard.reports.base import StreamingReportWriter, strongest_evidence
from vdbguard.reports.schema import Finding, Report

UNMASKED_WARNING = "# WARNING: unmasked PII (--show-pii); handle this file as PII"
COLUMNS = (
    "record_id",
    "collection",
    "namespace",
    "severity",
    "pii_types",
    "attack",
    "score",
    "threshold",
    "recovered",
    "confirmed_by_source",
    "kind",
    "fields",
)
# A spreadsheet runs a cell that starts with one of these as a formula (OWASP "CSV injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: str) -> str:
    """Recovered text and record ids are attacker-influenced: a leading ``'`` keeps them text."""
    return "'" + value if value.startswith(_FORMULA_START) else value


def _row(finding: Finding) -> list[str]:
    best = strongest_evidence(finding)
    recovered = best.recovered or next((e.recovered for e in finding.evidence if e.recovered), "")
    confirmed = (
        "n/a"
        if finding.confirmed_by_source is None
        else ";".join(f"{k}:{'yes' if v else 'no'}" for k, v in finding.confirmed_by_source.items())
    )
    text = [finding.record_id, finding.collection, finding.namespace or "", finding.severity.value]
    text += [";".join(finding.pii_types), best.attack]
    scores = [f"{best.score:.4f}", f"{best.threshold:.4f}", _cell(recovered), confirmed]
    return [_cell(v) for v in text] + scores + [finding.kind, _cell(";".join(finding.fields))]


def render_csv(report: Report) -> str:
    return "".join(csv_chunks(report))


def csv_chunks(report: Report) -> Iterator[str]:
    """One piece per 1,000 rows."""
    buffer = io.StringIO()
    # "\n", not the csv default "\r\n": write_text would turn it into "\r\r\n" on Windows.
    writer = csv.writer(buffer, lineterminator="\n")
    if not report.masked:
        writer.writerow([UNMASKED_WARNING])
    writer.writerow(COLUMNS)
    for count, finding in enumerate(report.iter_findings(), start=1):
        writer.writerow(_row(finding))
        if count % 1000 == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


class CsvReport(StreamingReportWriter):
    name: ClassVar[str] = "csv"
    filename: ClassVar[str] = "report.csv"

    def chunks(self, report: Report) -> Iterator[str]:
        return csv_chunks(report)
