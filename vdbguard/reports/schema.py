"""The versioned report schema. ``docs/report-schema.json`` is generated from these models.

Bump SCHEMA_VERSION's major part for any change that could break a consumer.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

SCHEMA_VERSION = "1.8"


class Severity(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return list(Severity).index(self)


class Evidence(BaseModel):
    """One attack's reason to believe a record leaks one PII type."""

    attack: str = Field(description="attack plugin name, e.g. 'pii-probe' or 'bag-of-words'")
    pii_type: str
    score: float = Field(description="the attack's score; flagged because score >= threshold")
    threshold: float
    detail: str = Field(description="what the attack did, in words")
    recovered: str | None = Field(default=None, description="the recovered value, masked unless --show-pii")


class InferredAttribute(BaseModel):
    """A sensitive attribute that is not a PII type (sex, age band, author), inferred from the vector alone."""

    attack: str
    attribute: str = Field(description="e.g. 'sex', 'age_band', 'author'")
    value: str = Field(description="the likeliest value, masked unless --show-pii")
    probability: float = Field(description="the attack's probability for that value; reported when >= threshold")
    threshold: float


VECTOR, STORED_TEXT = "vector", "stored_text"
FindingKind = Literal["vector", "stored_text"]


class Finding(BaseModel):
    record_id: str
    kind: FindingKind = Field(
        default=VECTOR,
        description="vector: the vector leaks PII to an attacker who reads it alone; stored_text: the record keeps "
        "PII or a secret in plain text beside its vector (schema 1.5)",
    )
    fields: list[str] = Field(
        default_factory=list,
        description="stored_text: the fields the PII was found in, e.g. document or payload.author (schema 1.5)",
    )
    collection: str
    namespace: str | None = None
    severity: Severity
    pii_types: list[str]
    evidence: list[Evidence]
    recovered_words: list[str] = Field(default_factory=list, description="bag-of-words output, masked")
    confirmed_by_source: dict[str, bool] | None = Field(
        default=None,
        description="for each flagged type, whether the PII detector found it in the record's stored text (false: "
        "not confirmed by the detector, which misses some; severity is lowered on it only where checksum and shape "
        "validators agree the text lacks the type); null when the record stores no text",
    )
    recovered_words_in_source: int | None = Field(
        default=None, description="how many recovered words occur in the stored text"
    )
    inferred_attributes: list[InferredAttribute] = Field(
        default_factory=list, description="sensitive attributes inferred for a flagged record (schema 1.1)"
    )
    vector_matches_source: bool | None = Field(
        default=None,
        description="whether the stored vector is the embedder's vector of the stored text (re-embedded, cosine "
        ">= 0.98): then the vector holds no more than the text, and a type the text does not contain is capped at "
        "low severity; null when not checked (no text, an embedder that cannot run here, or a flagged type that the "
        "detector or a validator finds in the text, where the check could not change the severity) (schema 1.4)",
    )


class RecordProblem(BaseModel):
    record_id: str
    field: str
    problem: str


class AttackInfo(BaseModel):
    name: str
    description: str
    threshold: float
    metrics: dict[str, float] = Field(description="held-out quality measured when the attack was trained")


class Target(BaseModel):
    connector: str
    collection: str
    location: str = Field(description="path or URL, credentials removed")
    dimension: int | None
    count: int
    metric: str | None


class EmbedderInfo(BaseModel):
    name: str = Field(description="the model, or 'store' when the store's own model could not run here")
    fingerprint: str
    dimension: int | None


class Summary(BaseModel):
    records_scanned: int
    records_flagged: int
    records_skipped: int
    by_severity: dict[str, int]
    by_pii_type: dict[str, int]
    records_with_source_text: int
    source_pii_records: int = Field(description="records whose stored text contains PII (detector)")
    source_pii_flagged: int = Field(description="of those, how many an attack flagged from the vector alone")
    stored_text_flagged: int = Field(
        default=0, description="records with a stored_text finding: PII or a secret kept in plain text (schema 1.5)"
    )


class TypeQuality(BaseModel):
    """How well one PII type was told apart on held-out records of the store itself."""

    positives: int = Field(description="held-out records whose stored text the detector found this type in")
    recall: float | None = Field(description="share of those the scan flags for this type")
    false_positive_rate: float | None = Field(description="share of the other held-out records flagged for it")
    auc: float | None = Field(description="ROC AUC of the fused probability for this type, held out")


class OwnerCalibration(BaseModel):
    """Owner-side calibration: probes and thresholds fitted on the store's own labelled records."""

    used: bool
    records_labelled: int = Field(description="records whose stored text the detector labelled")
    records_with_pii: int
    records_unsure: int = Field(
        default=0,
        description="labelled records left out of the verdict's fit and the held-out numbers: the detector found no "
        "PII in their text but nearly found some (schema 1.8)",
    )
    folds: dict[str, int] = Field(description="cross-fitting folds for the probe scores and the held-out numbers")
    target_false_positive_rate: float
    fused_cutoffs: dict[str, float] = Field(description="PII type -> the fused probability that flags it")
    held_out_recall: float | None = Field(description="records with PII flagged, on held-out records")
    held_out_false_positive_rate: float | None = Field(description="records without PII flagged, held out")
    per_type: dict[str, TypeQuality]
    aligned_to: str | None = Field(
        default=None, description="--embedder store: the packaged model whose attacks ran on mapped vectors"
    )
    alignment_cosine: float | None = Field(
        default=None, description="mean cosine of mapped store vectors to that model's embeddings, held out"
    )
    loaded_from: str | None = Field(default=None, description="set when a saved calibration was reused")


class VerdictInfo(BaseModel):
    """Which verdict judged the records by their vectors, and why that one (schema 1.7)."""

    name: Literal["owner", "packaged", "any"] = Field(
        description="owner: fitted (or reused) on this store's own labelled records; packaged: fitted on held-out "
        "real text and shipped; any: each attack's own threshold"
    )
    reason: str = Field(description="why this verdict: e.g. why owner-side calibration did not run or could not fit")


class ExpectedQuality(BaseModel):
    """How this kind of scan did on real text in the project's benchmark: what a flag here is likely to mean."""

    mode: str = Field(description="default (vectors only), owner (owner-side calibration) or store (--embedder store)")
    source: str
    recall: float = Field(description="share of records naming a real person that were flagged")
    false_positive_rate: float = Field(description="share of records naming nobody that were flagged")
    measured_on: str
    command: str


class RunSummary(BaseModel):
    """One earlier (or this) run of the same job on the same collection, from the job's state (schema 1.3)."""

    finished_at: datetime
    records_scanned: int
    records_flagged: int
    by_severity: dict[str, int]
    records_attacked: int = Field(description="new or changed records the attacks ran on; the rest carried over")


class Coverage(BaseModel):
    """What this run looked at, when a budget or a sample kept it from attacking everything (schema 1.3)."""

    records_in_collection: int
    records_attacked: int = Field(description="new or changed records the fast tier ran on in this run")
    records_carried_over: int = Field(description="unchanged records whose verdict was kept from an earlier run")
    fast_tier_sample: float = Field(description="share of records the fast tier attacks (1.0: every record)")
    deep_attacks: list[str] = Field(default_factory=list)
    deep_records: int = Field(default=0, description="records the deep attacks ran on")
    deep_flagged_by_fast: int = Field(default=0, description="records the fast tier flagged")
    deep_flagged_covered: int = Field(default=0, description="of those, how many the deep attacks reached")
    deep_budget_exhausted: bool = False
    findings_resolved: int = Field(default=0, description="findings closed because their record was deleted")
    findings_suppressed: int = Field(default=0, description="findings hidden by an allow list or a suppression")


class Report(BaseModel):
    """One scan's report. Past 5,000 findings a scan keeps them on disk and ``findings`` is empty: read them
    with :meth:`iter_findings` (and count them with :attr:`finding_count`), which works for every report."""

    schema_version: str = SCHEMA_VERSION
    tool_version: str
    created_at: datetime
    target: Target
    embedder: EmbedderInfo
    detector: str | None = Field(
        default=None,
        description="the PII detector that read stored and recovered text and labelled the owner's records: its "
        "plugin name and version, e.g. 'presidio 6' (schema 1.6)",
    )
    attacks: list[AttackInfo]
    masked: bool
    summary: Summary
    findings: list[Finding]
    record_problems: list[RecordProblem]
    calibration: OwnerCalibration | None = Field(
        default=None, description="owner-side calibration, when the scan fitted (or reused) one"
    )
    verdict: VerdictInfo | None = Field(default=None, description="the verdict that judged the vectors, and why")
    expected_quality: list[ExpectedQuality] = Field(
        default_factory=list,
        description="the verdicts' measured quality on real text, for this embedder and verdict mode; empty when "
        "none was measured (then quality_not_measured says so)",
    )
    quality_not_measured: str | None = Field(
        default=None, description="why expected_quality is empty: the embedder and mode nobody measured (schema 1.5)"
    )
    coverage: Coverage | None = Field(default=None, description="set by scans that keep state or use budgets")
    history: list[RunSummary] = Field(
        default_factory=list, description="this job's finished runs on this collection, oldest first, this run last"
    )
    _spool: Any = PrivateAttr(default=None)  # a FindingSpool holding the findings instead of ``findings``

    def spooled(self, spool: Any) -> Report:
        """This report with its findings read from ``spool`` (a FindingSpool) rather than held in ``findings``."""
        report = self.model_copy(update={"findings": []})
        report._spool = spool
        return report

    def iter_findings(self) -> Iterator[Finding]:
        """Every finding, from memory or streamed from the spool: what report writers read."""
        return iter(self._spool) if self._spool is not None else iter(self.findings)

    @property
    def finding_count(self) -> int:
        return len(self._spool) if self._spool is not None else len(self.findings)
