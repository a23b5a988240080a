"""report.sarif: SARIF 2.1.0 (OASIS), so code-scanning dashboards can track leaking records like other alerts.

Plain dicts and json, no SARIF library: the subset used here is small and the test validates it against the
official schema.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any, ClassVar

from vdbguard.reports.base import ReportWriter, splice_list, strongest_evidence
from vdbguard.reports.schema import Finding, Report, Severity

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
UNMASKED_WARNING = "WARNING: unmasked PII (--show-pii); handle this file as PII."
LEVELS = {Severity.CRITICAL: "error", Severity.HIGH: "error", Severity.MEDIUM: "warning", Severity.LOW: "note"}
HELP = (
    "Anyone who can read this collection's vectors can recover this PII from them, without the text. "
    "Restrict access to the collection as you would to the source documents. Stop embedding the PII: redact "
    "the text before embedding (vdbguard.hooks: redact_then_embed, GuardedEmbeddings, GuardedEmbedding), "
    "or protect the stored vectors with `vdbguard protect --transform ...` (see `vdbguard transforms list`). "
    "Then re-run `vdbguard scan`; `--fail-on` makes it a CI gate."
)


def rule_id(pii_type: str) -> str:
    return f"vdbguard/pii/{pii_type}"


def _rule(pii_type: str) -> dict[str, Any]:
    return {
        "id": rule_id(pii_type),
        "shortDescription": {"text": f"Vector leaks {pii_type}"},
        "fullDescription": {
            "text": f"An attack given only a record's embedding recovered or detected {pii_type} in it, "
            "so the vector store exposes that PII to anyone who can read its vectors."
        },
        "help": {"text": HELP},
        "properties": {"tags": ["privacy", "pii", "vector-database"]},
    }


def fingerprint(report: Report, finding: Finding) -> str:
    """Same record, same types -> same hash across runs, so dashboards update an alert instead of adding one."""
    key = [report.target.connector, finding.collection, finding.namespace, finding.record_id, sorted(finding.pii_types)]
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()


def _result(report: Report, finding: Finding, rule_index: dict[str, int]) -> dict[str, Any]:
    best = strongest_evidence(finding)
    text = (
        f"Record {finding.record_id!r} in collection {finding.collection!r} leaks {', '.join(finding.pii_types)} "
        f"through its vector: {best.attack} scored {best.score:.2f} against threshold {best.threshold:.2f} "
        f"for {best.pii_type}" + (f", recovering {best.recovered!r}." if best.recovered else ".")
    )
    if not report.masked:
        text = f"{UNMASKED_WARNING} {text}"
    path = "/".join(part for part in (finding.collection, finding.namespace, finding.record_id) if part)
    return {
        "ruleId": rule_id(best.pii_type),
        "ruleIndex": rule_index[best.pii_type],
        "level": LEVELS[finding.severity],
        "message": {"text": text},
        "locations": [
            {
                "logicalLocations": [
                    {
                        "name": finding.record_id,
                        "fullyQualifiedName": f"{report.target.connector}://{path}",
                        "kind": "object",
                    }
                ]
            }
        ],
        "partialFingerprints": {"vdbguardRecord/v1": fingerprint(report, finding)},
        "properties": {
            "severity": finding.severity.value,
            "piiTypes": finding.pii_types,
            "confirmedBySource": finding.confirmed_by_source,
        },
    }


def render_sarif(report: Report) -> str:
    return "".join(sarif_chunks(report))


def sarif_chunks(report: Report) -> Iterator[str]:
    pii_types = sorted({e.pii_type for f in report.iter_findings() for e in f.evidence})
    rule_index = {pii_type: i for i, pii_type in enumerate(pii_types)}
    t = report.target
    properties: dict[str, Any] = {
        "masked": report.masked,
        "target": {"connector": t.connector, "collection": t.collection, "location": t.location},
        "reportSchemaVersion": report.schema_version,
    }
    if not report.masked:
        properties["warning"] = UNMASKED_WARNING
    run = {
        "tool": {
            "driver": {
                "name": "vdbguard",
                "version": report.tool_version,
                "rules": [_rule(pii_type) for pii_type in pii_types],
            }
        },
        # The category: one collection's upload must not close another collection's alerts.
        "automationDetails": {"id": f"vdbguard/{t.connector}/{t.collection}/"},
        "results": [],
        "properties": properties,
    }
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    results = (
        json.dumps(_result(report, finding, rule_index), indent=2, ensure_ascii=False)
        for finding in report.iter_findings()
    )
    yield from splice_list(json.dumps(log, indent=2, ensure_ascii=False), "results", results)


class SarifReport(ReportWriter):
    name: ClassVar[str] = "sarif"
    filename: ClassVar[str] = "report.sarif"

    def render(self, report: Report) -> str:
        return render_sarif(report)

    def chunks(self, report: Report) -> Iterator[str]:
        return sarif_chunks(report)
