"""A report writer renders one Report in one format; ``--format`` picks writers by name."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from vdbguard.cache import atomic_write
from vdbguard.errors import VdbguardError
from vdbguard.reports.schema import Evidence, Finding, Report


class ReportWriter(ABC):
    """Writes ``filename`` into the output folder. Register a new format under ``vdbguard.reports``."""

    name: ClassVar[str]
    filename: ClassVar[str]

    @abstractmethod
    def render(self, report: Report) -> str: ...

    def write(self, report: Report, out: Path) -> Path:
        """Replace the file whole, owner-only (a report names records that leak): a full disk leaves the
        previous report, never half of a new one."""
        path = out / self.filename
        try:
            with atomic_write(path) as handle:
                handle.write(self.render(report).encode("utf-8"))
        except OSError as exc:
            raise VdbguardError(
                f"cannot write the report {path} ({exc})",
                "free disk space or pass a writable --out; a previous report there is unchanged",
            ) from exc
        return path


def strongest_evidence(finding: Finding) -> Evidence:
    """The evidence furthest over its own threshold: attacks score on different scales, so compare margins."""
    return max(finding.evidence, key=lambda e: e.score - e.threshold)
