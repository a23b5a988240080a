"""`vdbguard audit`: the exposure surface of one collection, beside what the attacks recover.

Access control is the strongest defense the inversion literature names (seed 001): a vector nobody can read
cannot be inverted. The audit reads the collection (never writes) and reports, each with a severity and a fix:

- **transport**: a server reached over plain http sends vectors and credentials in clear;
- **raw vectors**: stored vectors that the named embedder makes from their own stored text are its raw
  output, so every inversion attack applies as measured;
- **payload–vector consistency**, a check no other tool makes: each stored text is embedded again and compared
  with its stored vector. Where the text holds redaction placeholders (``<PERSON>``, ``[REDACTED]``) but the
  vector is not the embedding of that text, the vector was made from the text before redaction: it leaks
  what the payload hides.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from vdbguard.connectors.base import Connector
from vdbguard.embedders import Embedder
from vdbguard.errors import RecordError
from vdbguard.records import VectorRecord
from vdbguard.reports.schema import Severity

SAME_TEXT = 0.98  # cosine of a vector and its own text re-embedded: 0.9999+ measured; batch padding aside
MOSTLY = 0.5  # more records than this not matching their text: the embedder named is not the store's
_PLACEHOLDER = re.compile(r"<[A-Z][A-Z_]{2,}>|\[(?:REDACTED|[A-Z][A-Z_]{2,})\]|\*{4,}|█{2,}")
_LOOPBACK = ("localhost", "127.0.0.1", "::1")


@dataclass
class AuditFinding:
    """One exposure, with what shows it and what to do."""

    check: str
    severity: Severity
    message: str
    fix: str
    record_ids: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass
class AuditReport:
    connector: str
    collection: str
    location: str
    embedder: str
    records: int
    texts_checked: int
    findings: list[AuditFinding]
    notes: list[str] = field(default_factory=list)  # what could not be checked, and why

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), key=lambda s: s.rank, default=None)


def has_placeholder(text: str) -> bool:
    """Whether ``text`` carries a redaction placeholder (Presidio's ``<TYPE>``, ``[REDACTED]``, masks)."""
    return bool(_PLACEHOLDER.search(text))


def transport_findings(location: str) -> list[AuditFinding]:
    parts = urlsplit(location)
    if parts.scheme != "http" or (parts.hostname or "") in _LOOPBACK:
        return []
    return [
        AuditFinding(
            "transport",
            Severity.MEDIUM,
            f"the store is reached over plain http at {parts.hostname}: vectors and credentials cross the network "
            "in clear",
            "serve the store over https (TLS) and connect with an https:// URL",
        )
    ]


def _records_with_text(connector: Connector, limit: int) -> Iterator[tuple[VectorRecord, np.ndarray, str]]:
    seen = 0
    for batch in connector.iter_batches(batch_size=256):
        for record in batch.records:
            text = record.source_text
            if text is None or not text.strip():
                continue
            try:
                vector = record.checked_vector()
            except RecordError:  # the scan reports bad records; the audit needs a vector to compare
                continue
            yield record, vector, text
            seen += 1
            if seen >= limit:
                return


def consistency_findings(
    connector: Connector, embedder: Embedder, sample: int
) -> tuple[list[AuditFinding], list[str], int]:
    """Each stored text embedded again and compared with its stored vector (at most ``sample`` records): the
    findings, notes on what could not be checked, and how many texts were."""
    rows = list(_records_with_text(connector, sample))
    if not rows:
        return [], ["no record keeps its text: payload-vector consistency not checked"], 0
    ids = [record.id for record, _, _ in rows]
    texts = [text for _, _, text in rows]
    stored = np.stack([vector for _, vector, _ in rows])
    if stored.shape[1] != embedder.dimension:
        note = f"stored vectors have {stored.shape[1]} dimensions and {embedder.name} makes {embedder.dimension}"
        return [], [f"{note}: pass the --embedder that made them to check them against their text"], 0
    stored /= np.maximum(np.linalg.norm(stored, axis=1, keepdims=True), 1e-12)
    similarity = np.sum(embedder.encode(texts) * stored, axis=1)
    mismatched = similarity < SAME_TEXT
    median = round(float(np.median(similarity)), 4)
    if mismatched.mean() > MOSTLY:
        note = (
            f"{int(mismatched.sum())} of {len(ids)} stored vectors are not {embedder.name}'s embedding of their "
            f"stored text (median cosine {median}): another model made them, or they were transformed; pass the "
            "--embedder that made them (or --embedder auto) to check them against their text"
        )
        return [], [note], len(ids)
    findings = [
        AuditFinding(
            "raw vectors",
            Severity.MEDIUM,
            f"{int((~mismatched).sum())} of {len(ids)} stored vectors are {embedder.name}'s raw output for their "
            f"stored text (median cosine {median}): every inversion attack applies as measured",
            "protect the vectors before insert (vdbguard protect / guard; BENCHMARKS.md: redact before embedding) "
            "and give readers of raw vectors the fewest credentials",
            evidence={"median_cosine": median},
        )
    ]
    leaking = [i for i in np.flatnonzero(mismatched) if has_placeholder(texts[i])]
    if leaking:
        findings.append(
            AuditFinding(
                "payload-vector consistency",
                Severity.HIGH,
                f"{len(leaking)} records have redacted text but a vector that is not the embedding of it: the vector "
                "was made from the text before redaction and leaks what the payload hides",
                "re-embed these records from their redacted text (redact before embedding: vdbguard.hooks)",
                record_ids=[ids[i] for i in leaking],
                evidence={"cosine": {ids[i]: round(float(similarity[i]), 4) for i in leaking}},
            )
        )
    other = [i for i in np.flatnonzero(mismatched) if i not in set(leaking)]
    if other:
        findings.append(
            AuditFinding(
                "payload-vector consistency",
                Severity.LOW,
                f"{len(other)} records have a vector that is not the embedding of their stored text (text edited "
                "after embedding, or embedded from other text)",
                "check how these records were written; re-embed them if their text changed",
                record_ids=[ids[i] for i in other],
                evidence={"cosine": {ids[i]: round(float(similarity[i]), 4) for i in other}},
            )
        )
    return findings, [], len(ids)


def audit_collection(
    connector: Connector, *, connector_name: str, location: str, embedder: Embedder, sample: int = 2000
) -> AuditReport:
    """The exposure surface of the connector's collection; reads only."""
    info = connector.describe()
    consistency, notes, checked = consistency_findings(connector, embedder, sample)
    return AuditReport(
        connector=connector_name,
        collection=info.name,
        location=location,
        embedder=embedder.name,
        records=info.count or 0,
        texts_checked=checked,
        findings=[*transport_findings(location), *consistency],
        notes=notes,
    )
