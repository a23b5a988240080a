"""report.json: the machine-readable report, following the versioned schema in docs/report-schema.json."""

from __future__ import annotations

from typing import ClassVar

from vdbguard.reports.base import ReportWriter
from vdbguard.reports.schema import Report


class JsonReport(ReportWriter):
    name: ClassVar[str] = "json"
    filename: ClassVar[str] = "report.json"

    def render(self, report: Report) -> str:
        return report.model_dump_json(indent=2)
