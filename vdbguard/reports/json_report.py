"""report.json: the machine-readable report, following the versioned schema in docs/report-schema.json."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from vdbguard.reports.base import StreamingReportWriter, splice_list
from vdbguard.reports.schema import Report


class JsonReport(StreamingReportWriter):
    name: ClassVar[str] = "json"
    filename: ClassVar[str] = "report.json"

    def chunks(self, report: Report) -> Iterator[str]:
        if report.findings or not report.finding_count:
            yield report.model_dump_json(indent=2)
            return
        findings = (finding.model_dump_json(indent=2) for finding in report.iter_findings())
        yield from splice_list(report.model_dump_json(indent=2), "findings", findings)
