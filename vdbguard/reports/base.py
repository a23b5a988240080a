"""A report writer renders one Report in one format; ``--format`` picks writers by name."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
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

    def chunks(self, report: Report) -> Iterator[str]:
        """The file in pieces: writers of every finding stream them, so memory does not grow with findings."""
        yield self.render(report)

    def write(self, report: Report, out: Path) -> Path:
        """Replace the file whole, owner-only (a report names records that leak)."""
        path = out / self.filename
        replace_file(path, self.chunks(report), "report", "a previous report there is unchanged")
        return path


class StreamingReportWriter(ReportWriter):
    """A writer whose file is its :meth:`chunks`: rendering it whole joins them."""

    @abstractmethod
    def chunks(self, report: Report) -> Iterator[str]: ...

    def render(self, report: Report) -> str:
        return "".join(self.chunks(report))


def replace_file(path: Path, chunks: Iterable[str], what: str, kept: str) -> None:
    """Write ``chunks`` to ``path`` through a temporary file, so a full disk leaves the previous file, never half of
    a new one; a failure says which file (``what``) and what is still there (``kept``)."""
    try:
        with atomic_write(path) as handle:
            for chunk in chunks:
                handle.write(chunk.encode("utf-8"))
    except OSError as exc:
        raise VdbguardError(
            f"cannot write the {what} {path} ({exc})", f"free disk space or pass a writable --out; {kept}"
        ) from exc


def strongest_evidence(finding: Finding) -> Evidence:
    """The evidence furthest over its own threshold: attacks score on different scales, so compare margins."""
    return max(finding.evidence, key=lambda e: e.score - e.threshold)


def splice_list(document: str, key: str, items: Iterable[str]) -> Iterator[str]:
    """``document`` (JSON indented by 2) with the empty list under ``key`` filled with ``items`` (each item's own
    JSON, indented by 2), indented as a dump of the whole document would indent them."""
    found = re.search(rf'\n( *)"{re.escape(key)}": \[\]', document)
    if found is None:
        raise ValueError(f"no empty {key!r} list in the document")
    indent = found.group(1) + "  "
    yield document[: found.end() - 1]
    first = True
    for item in items:
        yield ("\n" if first else ",\n") + indent + item.replace("\n", "\n" + indent)
        first = False
    yield ("\n" + found.group(1) + "]" if not first else "]") + document[found.end() :]
