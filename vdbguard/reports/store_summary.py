"""store-summary.json and store-summary.md: after a scan of several collections, which of them hold the risk.

One row per collection scanned: its records, the records with findings of each kind, its highest severity and
its sensitivity, the riskiest collection first (highest severity, then sensitivity, then records with findings,
then name). Counts and names only: no record id, recovered value or PII, so the summary can go where the reports
cannot. Collection names, store labels and locations are the store's or the user's own text: report.md's
:func:`~vdbguard.reports.markdown.code_span` shows them in the Markdown, never as Markdown.

Sensitivity is the share of a collection's scanned records that have at least one high or critical finding, of
any kind (0 to 1; the Markdown shows it as a percentage). Why that and not a weighted count of findings:

- it counts records, not findings: a record that leaks through its vector and keeps the same PII in its text is
  one record at risk, and a store's owner acts on records;
- it is a share, so a collection of 200 records and one of 2 million compare; the absolute count stands beside it;
- it counts the severities a job fails on by default (``fail_on = "high"``), so low and medium findings (a type
  capped at low because the vector holds no more than the stored text, a borderline guess) cannot inflate it;
- it has no weights to argue about: "4.2% of its records leak high-severity PII" reads as what it is.

A collection with findings below high scores 0 but still ranks above a clean one by its highest severity.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from vdbguard.credentials import safe_text
from vdbguard.errors import VdbguardError
from vdbguard.reports.base import replace_file
from vdbguard.reports.markdown import code_span, escape_text
from vdbguard.reports.schema import Finding, Report, Severity

SUMMARY_VERSION = 1
JSON_FILE, MARKDOWN_FILE = "store-summary.json", "store-summary.md"
SENSITIVE = frozenset({Severity.HIGH, Severity.CRITICAL})
SENSITIVITY = "share of scanned records with at least one high or critical finding, of any kind"

FINDING_KINDS: tuple[str, ...] = ("vector", "stored_text")
"""The kinds of finding a report holds (``Finding.kind``), one "records with findings" column each, in this order.
A new kind of finding gets its column by being added here; until then it is counted under its own name after
these, so no finding is left out of a row."""


def finding_kind(finding: Finding) -> str:
    """A finding's kind; reports from before kinds existed hold vector findings only."""
    return str(getattr(finding, "kind", FINDING_KINDS[0]))


@dataclass(frozen=True)
class CollectionRow:
    """One collection as the summary shows it."""

    store: str
    connector: str
    collection: str
    location: str
    records: int
    flagged: int
    flagged_by_kind: dict[str, int]
    sensitive: int
    highest: Severity | None
    reports: str

    @property
    def sensitivity(self) -> float:
        return self.sensitive / self.records if self.records else 0.0

    def risk_order(self) -> tuple[int, float, int, str, str]:
        """Sorts the riskiest first."""
        rank = self.highest.rank if self.highest is not None else -1
        return -rank, -self.sensitivity, -self.flagged, self.collection, self.store

    def as_json(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "connector": self.connector,
            "collection": self.collection,
            "location": self.location,
            "records_scanned": self.records,
            "records_with_findings": self.flagged,
            "records_with_findings_by_kind": self.flagged_by_kind,
            "records_high_or_critical": self.sensitive,
            "highest_severity": None if self.highest is None else self.highest.value,
            "sensitivity": round(self.sensitivity, 6),
            "reports": self.reports,
        }


def collection_row(report: Report, store: str, reports: Path | str) -> CollectionRow:
    """The row of one collection's report (findings read once, as a stream: a spooled report stays on disk)."""
    by_kind: dict[str, set[tuple[str | None, str]]] = {kind: set() for kind in FINDING_KINDS}
    sensitive: set[tuple[str | None, str]] = set()
    highest: Severity | None = None
    for finding in report.iter_findings():
        record = (finding.namespace, finding.record_id)  # one id in two namespaces is two records
        by_kind.setdefault(finding_kind(finding), set()).add(record)
        if finding.severity in SENSITIVE:
            sensitive.add(record)
        if highest is None or finding.severity.rank > highest.rank:
            highest = finding.severity
    flagged = set().union(*by_kind.values())
    return CollectionRow(
        store=store,
        connector=report.target.connector,
        collection=report.target.collection,
        location=report.target.location,
        records=report.summary.records_scanned,
        flagged=len(flagged),
        flagged_by_kind={kind: len(records) for kind, records in by_kind.items()},
        sensitive=len(sensitive),
        highest=highest,
        reports=str(reports),
    )


@dataclass(frozen=True)
class FailedCollection:
    """A collection whose scan failed: named in the summary, with the error (credentials scrubbed)."""

    store: str
    collection: str
    error: str
    hint: str | None

    def as_json(self) -> dict[str, Any]:
        return {"store": self.store, "collection": self.collection, "error": self.error, "hint": self.hint}


@dataclass
class StoreSummary:
    """Rows added as collections finish; written once the last one has."""

    rows: list[CollectionRow] = field(default_factory=list)
    failed: list[FailedCollection] = field(default_factory=list)

    def add(self, report: Report, store: str, reports: Path | str) -> None:
        self.rows.append(collection_row(report, store, reports))

    def add_failure(self, store: str, collection: str, error: VdbguardError) -> None:
        hint = None if error.hint is None else safe_text(error.hint)
        self.failed.append(FailedCollection(store, collection, safe_text(error.message), hint))

    def ordered(self) -> list[CollectionRow]:
        return sorted(self.rows, key=CollectionRow.risk_order)

    def kinds(self) -> list[str]:
        """The columns of records with findings: every known kind, then any other kind a row holds."""
        seen = [kind for row in self.rows for kind in row.flagged_by_kind]
        return list(dict.fromkeys([*FINDING_KINDS, *seen]))

    def as_json(self, created_at: datetime | None = None) -> dict[str, Any]:
        rows = self.ordered()
        records = sum(row.records for row in rows)
        sensitive = sum(row.sensitive for row in rows)
        highest = next((row.highest for row in rows if row.highest is not None), None)
        return {
            "summary_version": SUMMARY_VERSION,
            "tool_version": version("vdbguard"),
            "created_at": (created_at or datetime.now(UTC)).isoformat(),
            "sensitivity": SENSITIVITY,
            "finding_kinds": self.kinds(),
            "collections": [row.as_json() for row in rows],
            "failed": [failure.as_json() for failure in self.failed],
            "totals": {
                "collections": len(rows),
                "collections_failed": len(self.failed),
                "collections_with_findings": sum(1 for row in rows if row.flagged),
                "records_scanned": records,
                "records_with_findings": sum(row.flagged for row in rows),
                "records_with_findings_by_kind": {
                    kind: sum(row.flagged_by_kind.get(kind, 0) for row in rows) for kind in self.kinds()
                },
                "records_high_or_critical": sensitive,
                "highest_severity": None if highest is None else highest.value,
                "sensitivity": round(sensitive / records, 6) if records else 0.0,
            },
        }

    def table(self) -> tuple[list[str], list[list[str]]]:
        """Header and rows as plain text, for a terminal: a column per kind of finding counts the records with one.
        Cells hold the store's and the user's own text, to escape for whatever shows them."""
        stores = len({row.store for row in self.rows}) > 1
        header = [*(["store"] if stores else []), "collection", "records", *self.kinds(), "highest", "sensitivity"]
        rows = [
            [
                *([row.store] if stores else []),
                row.collection,
                str(row.records),
                *(str(row.flagged_by_kind.get(kind, 0)) for kind in self.kinds()),
                row.highest.value if row.highest is not None else "none",
                percent(row.sensitivity),
            ]
            for row in self.ordered()
        ]
        for failure in self.failed:
            cells = [*([failure.store] if stores else []), failure.collection, "-", *("-" for _ in self.kinds())]
            rows.append([*cells, "failed", "-"])
        return header, rows

    def markdown(self) -> str:
        totals = self.as_json()["totals"]
        stores = len({row.store for row in self.rows}) > 1
        header = [*(["store"] if stores else []), "collection", "records"]
        header += [f"records with {kind} findings" for kind in self.kinds()]
        header += ["highest severity", "sensitivity", "reports"]
        rows = [
            [
                *([code_span(row.store)] if stores else []),
                code_span(row.collection),
                str(row.records),
                *(str(row.flagged_by_kind.get(kind, 0)) for kind in self.kinds()),
                row.highest.value if row.highest is not None else "none",
                percent(row.sensitivity),  # digits, ".", "%" and "<" before a digit: never Markdown or HTML
                code_span(row.reports),
            ]
            for row in self.ordered()
        ]
        locations = sorted({row.location for row in self.rows})
        lines = [
            "# vdbguard store summary",
            "",
            f"{totals['collections']} collections scanned at "
            + ", ".join(map(code_span, locations))
            + f", {totals['collections_with_findings']} with findings ({totals['records_with_findings']} of "
            f"{totals['records_scanned']} records). The riskiest first.",
            "",
            *_table([escape_text(h) for h in header], rows),
            "",
            f"Sensitivity: the {escape_text(SENSITIVITY)}. Each collection's report.md lists its findings.",
            "",
        ]
        if self.failed:
            lines += [f"## {len(self.failed)} collections failed", "", "Not scanned; the others were.", ""]
            for failure in self.failed:
                where = f"{code_span(failure.store)}/{code_span(failure.collection)}"
                hint = f" ({escape_text(failure.hint)})" if failure.hint else ""
                lines += [f"- {where}: {escape_text(failure.error)}{hint}"]
            lines += [""]
        return "\n".join(lines)

    def write(self, out: Path) -> list[Path]:
        """store-summary.json and store-summary.md in ``out``, each replaced whole."""
        document = json.dumps(self.as_json(), indent=2, ensure_ascii=False) + "\n"
        written = []
        for name, text in ((JSON_FILE, document), (MARKDOWN_FILE, self.markdown())):
            path = out / name
            replace_file(path, [text], "store summary", "each collection's reports are written")
            written.append(path)
        return written


def percent(share: float) -> str:
    """A sensitivity as people read it: one record in a million still shows."""
    if share == 0:
        return "0%"
    if share < 0.0001:
        return "<0.01%"
    return f"{share:.2%}"


def _table(header: Iterable[str], rows: list[list[str]]) -> list[str]:
    """A GFM table of cells already made safe by ``code_span`` or ``escape_text``: GFM splits a row at every `|`,
    even inside a code span, so each gets a backslash (as report.md's tables do)."""
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines
