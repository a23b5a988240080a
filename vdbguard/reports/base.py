"""A report writer renders one Report in one format; ``--format`` picks writers by name."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from vdbguard.reports.schema import Evidence, Finding, Report


class ReportWriter(ABC):
    """Writes ``filename`` into the output folder. Register a new format under ``vdbguard.reports``."""

    name: ClassVar[str]
    filename: ClassVar[str]

    @abstractmethod
    def render(self, report: Report) -> str: ...

    def write(self, report: Report, out: Path) -> Path:
        path = out / self.filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.render(report), encoding="utf-8")
        return path


def strongest_evidence(finding: Finding) -> Evidence:
    """The evidence furthest over its own threshold: attacks score on different scales, so compare margins."""
    return max(finding.evidence, key=lambda e: e.score - e.threshold)
