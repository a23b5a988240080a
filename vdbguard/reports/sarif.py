"""report.sarif: SARIF 2.1.0 (OASIS) that GitHub code scanning ingests as it is, so dashboards track leaking
records like other alerts.

Plain dicts and json, no SARIF library: the subset used here is small, and the tests check it against the
official schema and against every rule of GitHub's "SARIF support for code scanning".

A vector record has no source file. Each result names the collection as a relative artifact,
``vdbguard/<connector>/<collection>``, line 1: the same URI whether a CLI scan or a job file found it, and no
file in the repository, so GitHub keeps the fingerprint written here instead of hashing a line of code. The
record itself stays a logical location, ``connector://collection/record_id``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any, ClassVar
from urllib.parse import quote

from vdbguard.masking import mask
from vdbguard.reports.base import StreamingReportWriter, splice_list, strongest_evidence
from vdbguard.reports.schema import VECTOR, Finding, Report, Severity

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/vdbguard/"
MAX_RESULTS = 25_000  # GitHub rejects a run with more results
MAX_DESCRIPTION = 1024  # GitHub's limit on a rule's short and full description
LEVELS = {Severity.CRITICAL: "error", Severity.HIGH: "error", Severity.MEDIUM: "warning", Severity.LOW: "note"}
# GitHub reads a rule's score as critical above 9.0, high from 7.0, medium from 4.0 and low from 0.1.
SECURITY_SEVERITY = {Severity.CRITICAL: "9.5", Severity.HIGH: "8.0", Severity.MEDIUM: "5.5", Severity.LOW: "2.0"}
TAGS = ["security", "privacy", "pii", "vector-database", "external/cwe/cwe-359"]
SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
STAND_IN_REGION = {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 1}
HELP = (
    "Anyone who can read this collection's vectors can recover this PII from them, without the text. "
    "Restrict access to the collection as you would to the source documents. Stop embedding the PII: redact "
    "the text before embedding (vdbguard.hooks: redact_then_embed, GuardedEmbeddings, GuardedEmbedding), "
    "or protect the stored vectors with `vdbguard protect --transform ...` (see `vdbguard transforms list`). "
    "Then re-run `vdbguard scan`; `--fail-on` makes it a CI gate."
)
HELP_MARKDOWN = """\
Anyone who can read this collection's vectors can recover this PII from them, **without the text**.

- Restrict access to the collection as you would to the source documents.
- Stop embedding the PII: redact the text before embedding (`vdbguard.hooks`: `redact_then_embed`, \
`GuardedEmbeddings`, `GuardedEmbedding`).
- Or protect the stored vectors with `vdbguard protect --transform ...` (see `vdbguard transforms list`).

Then re-run `vdbguard scan`; `--fail-on` makes it a CI gate. The alert's location is the collection \
(`vdbguard/<connector>/<collection>`), not a file: the record is named in the message.
"""
SHOWN_PII_WARNING = (
    "WARNING: this scan ran with --show-pii, so its other reports (report.json...) hold unmasked PII; recovered "
    "values are masked here all the same, as code-scanning alerts are read more widely than reports."
)


def rule_id(pii_type: str, severity: Severity, kind: str = VECTOR) -> str:
    """One rule per kind, type and severity: GitHub takes a result's security severity from its rule only."""
    return f"vdbguard/{'pii' if kind == VECTOR else 'stored-text'}/{pii_type}/{severity.value}"


def artifact_uri(report: Report) -> str:
    """The collection as a relative URI, each part percent-encoded (a collection name may hold '/' or '#')."""
    t = report.target
    return f"vdbguard/{quote(t.connector, safe='')}/{quote(t.collection, safe='')}"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _rule(pii_type: str, severity: Severity, kind: str = VECTOR) -> dict[str, Any]:
    name = pii_type.lower().replace("_", "-")
    if kind == VECTOR:
        short, full = (
            f"Vector leaks {pii_type} ({severity.value})",
            (
                f"An attack given only a record's embedding recovered or detected {pii_type} in it, so the vector "
                f"store exposes that PII to anyone who can read its vectors; vdbguard rated the leak {severity.value}."
            ),
        )
    else:
        short, full = (
            f"Stored text holds {pii_type} ({severity.value})",
            (
                f"The record keeps {pii_type} in plain text beside its vector (its document or payload), readable by "
                f"anyone who can read the store; vdbguard rated it {severity.value}."
            ),
        )
    return {
        "id": rule_id(pii_type, severity, kind),
        "name": f"{'vector-leaks' if kind == VECTOR else 'stored-text-holds'}-{name}",
        "shortDescription": {"text": _clip(short, MAX_DESCRIPTION)},
        "fullDescription": {"text": _clip(full, MAX_DESCRIPTION)},
        "help": {"text": HELP, "markdown": HELP_MARKDOWN},
        "defaultConfiguration": {"level": LEVELS[severity]},
        "properties": {"tags": TAGS, "security-severity": SECURITY_SEVERITY[severity]},
    }


def fingerprint(report: Report, finding: Finding) -> str:
    """Same record, same types -> same hash across runs, so dashboards update an alert instead of adding one."""
    key = [report.target.connector, finding.collection, finding.namespace, finding.record_id, sorted(finding.pii_types)]
    if finding.kind != VECTOR:
        key.append(finding.kind)
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()


def _message(report: Report, finding: Finding) -> str:
    best = strongest_evidence(finding)
    recovered = best.recovered if best.recovered is None or report.masked else mask(best.recovered)
    if finding.kind != VECTOR:
        return (
            f"Record {finding.record_id!r} in collection {finding.collection!r} keeps {', '.join(finding.pii_types)} "
            f"in plain text ({', '.join(finding.fields)}): {best.detail}" + (f", {recovered!r}." if recovered else ".")
        )
    return (
        f"Record {finding.record_id!r} in collection {finding.collection!r} leaks {', '.join(finding.pii_types)} "
        f"through its vector: {best.attack} scored {best.score:.2f} against threshold {best.threshold:.2f} "
        f"for {best.pii_type}" + (f", recovering {recovered!r}." if recovered else ".")
    )


def _result(report: Report, finding: Finding, rule_index: dict[str, int]) -> dict[str, Any]:
    rule = rule_id(strongest_evidence(finding).pii_type, finding.severity, finding.kind)
    path = "/".join(part for part in (finding.collection, finding.namespace, finding.record_id) if part)
    record_print = fingerprint(report, finding)
    return {
        "ruleId": rule,
        "ruleIndex": rule_index[rule],
        "level": LEVELS[finding.severity],
        "message": {"text": _message(report, finding)},
        "locations": [
            {
                "physicalLocation": {"artifactLocation": {"uri": artifact_uri(report)}, "region": STAND_IN_REGION},
                "logicalLocations": [
                    {
                        "name": finding.record_id,
                        "fullyQualifiedName": f"{report.target.connector}://{path}",
                        "kind": "object",
                    }
                ],
            }
        ],
        # GitHub tells alerts apart by primaryLocationLineHash alone; every result here shares one location.
        "partialFingerprints": {"primaryLocationLineHash": f"{record_print[:16]}:1", "vdbguardRecord/v1": record_print},
        "properties": {
            "severity": finding.severity.value,
            "piiTypes": finding.pii_types,
            "confirmedBySource": finding.confirmed_by_source,
        },
    }


def _quotas(severities: Counter[Severity]) -> dict[Severity, int]:
    """How many findings of each severity fit in one run, the most severe first."""
    room, quotas = MAX_RESULTS, {}
    for severity in sorted(Severity, key=lambda s: s.rank, reverse=True):
        quotas[severity] = min(severities[severity], room)
        room -= quotas[severity]
    return quotas


def _kept(report: Report, quotas: dict[Severity, int]) -> Iterator[Finding]:
    taken: Counter[Severity] = Counter()
    for finding in report.iter_findings():
        if taken[finding.severity] < quotas[finding.severity]:
            taken[finding.severity] += 1
            yield finding


def _driver(report: Report, rules: list[dict[str, Any]]) -> dict[str, Any]:
    driver: dict[str, Any] = {"name": "vdbguard", "version": report.tool_version, "informationUri": INFORMATION_URI}
    if SEMVER.match(report.tool_version):
        driver["semanticVersion"] = report.tool_version
    return {**driver, "rules": rules}


def _run_properties(report: Report, omitted: int) -> dict[str, Any]:
    t = report.target
    properties: dict[str, Any] = {
        "masked": True,
        "target": {"connector": t.connector, "collection": t.collection, "location": t.location},
        "reportSchemaVersion": report.schema_version,
    }
    if not report.masked:
        properties["warning"] = SHOWN_PII_WARNING
    if omitted:
        properties["truncated"] = (
            f"{omitted} of {report.finding_count} findings left out, the least severe first: GitHub code scanning "
            f"takes at most {MAX_RESULTS} results a run. report.json lists every finding."
        )
        properties["resultsOmitted"] = omitted
    return properties


def render_sarif(report: Report) -> str:
    return "".join(sarif_chunks(report))


def sarif_chunks(report: Report) -> Iterator[str]:
    """The log in pieces; findings are read twice (rules and quotas, then results), never held together."""
    rule_keys: set[tuple[str, Severity, str]] = set()
    severities: Counter[Severity] = Counter()
    for finding in report.iter_findings():
        rule_keys.add((strongest_evidence(finding).pii_type, finding.severity, finding.kind))
        severities[finding.severity] += 1
    ordered = sorted(rule_keys, key=lambda key: (key[2], key[0], -key[1].rank))
    rules = [_rule(pii_type, severity, kind) for pii_type, severity, kind in ordered]
    rule_index = {rule["id"]: i for i, rule in enumerate(rules)}
    quotas = _quotas(severities)
    run = {
        "tool": {"driver": _driver(report, rules)},
        # The category: one collection's upload must not close another collection's alerts.
        "automationDetails": {"id": f"vdbguard/{report.target.connector}/{report.target.collection}/"},
        "results": [],
        "properties": _run_properties(report, sum(severities.values()) - sum(quotas.values())),
    }
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    results = (
        json.dumps(_result(report, finding, rule_index), indent=2, ensure_ascii=False)
        for finding in _kept(report, quotas)
    )
    yield from splice_list(json.dumps(log, indent=2, ensure_ascii=False), "results", results)


class SarifReport(StreamingReportWriter):
    name: ClassVar[str] = "sarif"
    filename: ClassVar[str] = "report.sarif"

    def chunks(self, report: Report) -> Iterator[str]:
        return sarif_chunks(report)
