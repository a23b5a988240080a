"""Reports: the versioned schema and the writers that render it, one module per format."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vdbguard import plugins
from vdbguard.reports.base import ReportWriter
from vdbguard.reports.schema import Report

__all__ = ["DEFAULT_FORMATS", "ReportWriter", "write_reports"]

DEFAULT_FORMATS = ("json", "md")


def write_reports(report: Report, out: Path, formats: Sequence[str] = DEFAULT_FORMATS) -> list[Path]:
    """Write ``report`` into ``out`` once per format; an unknown format is refused before anything is written."""
    writers: list[ReportWriter] = [plugins.load("reports", name)() for name in formats]
    return [writer.write(report, out) for writer in writers]
