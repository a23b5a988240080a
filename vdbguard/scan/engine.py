"""The engine: stream records from a connector, run every attack, detect PII, emit findings.

After each batch the engine checkpoints a :class:`~vdbguard.scan.state.ScanState`, so a scan killed at
any point resumes from the last finished batch without skipping or double-counting a record.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vdbguard.attacks import Attack, Inference
from vdbguard.connectors.base import Connector
from vdbguard.detectors.base import Detection, Detector
from vdbguard.errors import RecordError, VdbguardError
from vdbguard.masking import mask_if
from vdbguard.pii import PiiType
from vdbguard.progress import ProgressSink, Silent
from vdbguard.records import VectorRecord
from vdbguard.reports.schema import Evidence, Finding, InferredAttribute, RecordProblem, Severity, Summary
from vdbguard.scan.state import ScanState
from vdbguard.scan.verdict import ScoreKey, StackedVerdict

TYPE_SEVERITY: dict[PiiType, Severity] = {
    PiiType.PERSON: Severity.MEDIUM,
    PiiType.EMAIL: Severity.MEDIUM,
    PiiType.PHONE: Severity.MEDIUM,
    PiiType.ADDRESS: Severity.MEDIUM,
    PiiType.DATE_OF_BIRTH: Severity.MEDIUM,
    PiiType.SSN: Severity.HIGH,
    PiiType.CREDIT_CARD: Severity.HIGH,
    PiiType.ACCOUNT_NUMBER: Severity.HIGH,
    PiiType.MEDICAL: Severity.HIGH,
}


def severity_of(pii_types: set[PiiType], recovered_verbatim: bool) -> Severity:
    """Worst type sets the base; a person linked to any other attribute, or PII recovered verbatim, is one worse."""
    base = max((TYPE_SEVERITY[t] for t in pii_types), key=lambda s: s.rank, default=Severity.LOW)
    linked = PiiType.PERSON in pii_types and len(pii_types) > 1
    steps = int(linked) + int(recovered_verbatim)
    return list(Severity)[min(base.rank + steps, Severity.CRITICAL.rank)]


class Scanner:
    """Runs the attacks on each batch and turns their evidence into findings.

    Each attack's evidence counts when its score reaches the attack's threshold. With a ``verdict``
    (owner-side calibration fits one), a stacked model over every attack's scores decides each PII type.
    """

    def __init__(
        self,
        attacks: Sequence[Attack],
        detector: Detector,
        dimension: int | None,
        mask_pii: bool = True,
        verdict: StackedVerdict | None = None,
    ) -> None:
        if not attacks:
            raise VdbguardError("no attacks to run", "pass at least one --attack")
        self.attacks = list(attacks)
        self.detector = detector
        self.dimension = dimension
        self.mask_pii = mask_pii
        self.verdict = verdict

    def evidence_scores(self, records: Sequence[VectorRecord]) -> list[dict[ScoreKey, float]]:
        """Per record, each attack's best score per PII type before any threshold (to calibrate on)."""
        vectors = [record.checked_vector(self.dimension) for record in records]
        return [_best_scores(self._candidates(row)) for row in self._infer(records, vectors)]

    def _infer(self, records: Sequence[VectorRecord], vectors: Sequence[np.ndarray]) -> list[list[Inference]]:
        """Every attack on the whole batch at once; one list of inferences (one per attack) per record."""
        matrix = np.stack(vectors)
        known = [record.source_text for record in records]
        per_attack = [attack.infer(matrix, known_texts=known) for attack in self.attacks]
        return [list(row) for row in zip(*per_attack, strict=True)]

    def scan(
        self,
        connector: Connector,
        *,
        batch_size: int = 256,
        state_path: Path | None = None,
        target: str = "",
        total: int | None = None,
        progress: ProgressSink | None = None,
    ) -> ScanState:
        """Scan every record; resume from ``state_path`` if an earlier run of this scan left one."""
        state = ScanState.load(state_path, target) if state_path else ScanState(target=target)
        if state.done:
            return state
        progress = progress or Silent()
        with progress.task("Scanning records", total) as advance:
            advance(state.records_scanned)
            for batch in connector.iter_batches(batch_size=batch_size, resume_from=state.cursor):
                self._scan_batch(batch.records, state)
                state.cursor = batch.cursor
                if state_path:
                    state.save(state_path)
                advance(len(batch.records))
        state.done = True
        if state_path:
            state.save(state_path)
        return state

    def _scan_batch(self, records: Sequence[VectorRecord], state: ScanState) -> None:
        usable, vectors = [], []
        for record in records:
            try:
                vectors.append(record.checked_vector(self.dimension))
                usable.append(record)
            except RecordError as exc:
                state.problems.append(RecordProblem(record_id=exc.record_id, field=exc.field, problem=exc.problem))
        state.records_scanned += len(records)
        if not usable:
            return
        for record, inferences in zip(usable, self._infer(usable, vectors), strict=True):
            finding = self._finding(record, inferences, state)
            if finding:
                state.findings.append(finding)

    def _candidates(self, inferences: list[Inference]) -> list[Candidate]:
        """Every attack's claim about one record, before any threshold."""
        found: list[Candidate] = []
        for attack, inference in zip(self.attacks, inferences, strict=True):
            for pii_type, score in inference.type_scores.items():
                detail = f"probe estimates P(text contains {pii_type.value}) = {score:.2f}"
                found.append(Candidate(attack, pii_type, score, detail))
            for pii_type, value, score in inference.recovered_pii:
                detail = f"{attack.name} recovered a {pii_type.value} value from the vector"
                found.append(Candidate(attack, pii_type, score, detail, value))
            for pii_type, bits in inference.exposure_bits.items():
                detail = f"the stored {pii_type.value} is exposed by {bits:.1f} bits (Carlini et al.)"
                found.append(Candidate(attack, pii_type, round(bits, 2), detail))
            if inference.recovered_text:
                word_scores = dict(inference.recovered_tokens)
                for detection in self.detector.detect(inference.recovered_text):
                    detail = f"{detection.recognizer} found {detection.pii_type.value} in the recovered words"
                    score = _detection_score(detection, word_scores)
                    found.append(Candidate(attack, detection.pii_type, score, detail, detection.value))
        return found

    def _decide(self, candidates: list[Candidate]) -> list[Evidence]:
        evidence = [c.evidence(self.mask_pii) for c in candidates if c.over_threshold]
        if self.verdict is None:
            return evidence
        scores = _best_scores(candidates)
        fused = []
        for pii_type, probability in self.verdict.probabilities([scores]).items():
            p, cutoff = float(probability[0]), self.verdict.cutoffs[pii_type]
            if p >= cutoff:
                attacks = ", ".join(self.verdict.models[pii_type].attacks)
                detail = f"stacked model over {attacks}: P(text contains {pii_type}) = {p:.3f}"
                fused.append(Evidence(attack=FUSED, pii_type=pii_type, score=p, threshold=cutoff, detail=detail))
        decided = {e.pii_type for e in fused}
        return fused + [e for e in evidence if e.pii_type in decided]

    def _finding(self, record: VectorRecord, inferences: list[Inference], state: ScanState) -> Finding | None:
        candidates = self._candidates(inferences)
        evidence = self._decide(candidates)
        recovered_words = [
            word for inference in inferences if inference.recovered_text for word, _ in inference.recovered_tokens
        ]
        attributes = [
            InferredAttribute(
                attack=attack.name,
                attribute=attribute,
                value=mask_if(value, self.mask_pii),
                probability=probability,
                threshold=attack.threshold,
            )
            for attack, inference in zip(self.attacks, inferences, strict=True)
            for attribute, (value, probability) in inference.attributes.items()
            if probability >= attack.threshold
        ]

        text = record.source_text
        source_types: set[PiiType] = set()
        if text is not None:
            source_types = {d.pii_type for d in self.detector.detect(text)}
            state.source_counts["with_text"] += 1
            state.source_counts["with_pii"] += bool(source_types)
        if not evidence:
            return None
        state.source_counts["with_pii_flagged"] += bool(source_types)

        flagged = {PiiType(e.pii_type) for e in evidence}
        lowered = text.lower() if text is not None else ""
        recovered_values = [
            c.value for c in candidates if c.value is not None and c.pii_type in flagged and c.over_threshold
        ]
        verbatim = any(value.lower() in lowered for value in recovered_values)
        return Finding(
            record_id=record.id,
            collection=record.collection,
            namespace=record.namespace,
            severity=severity_of(flagged, recovered_verbatim=bool(text) and verbatim),
            pii_types=sorted(t.value for t in flagged),
            evidence=evidence,
            recovered_words=[mask_if(word, self.mask_pii) for word in recovered_words],
            confirmed_by_source=None if text is None else {t.value: t in source_types for t in sorted(flagged)},
            recovered_words_in_source=None
            if text is None
            else sum(1 for word in set(recovered_words) if word in lowered),
            inferred_attributes=attributes,
        )


FUSED = "fused"


@dataclass(frozen=True)
class Candidate:
    """One attack's claim that a record holds a PII type, with its score, before any threshold."""

    attack: Attack
    pii_type: PiiType
    score: float
    detail: str
    value: str | None = None

    @property
    def over_threshold(self) -> bool:
        return self.score >= self.attack.threshold

    def evidence(self, mask_pii: bool) -> Evidence:
        return Evidence(
            attack=self.attack.name,
            pii_type=self.pii_type.value,
            score=self.score,
            threshold=self.attack.threshold,
            detail=self.detail,
            recovered=None if self.value is None else mask_if(self.value, mask_pii),
        )


def _best_scores(candidates: Sequence[Candidate]) -> dict[ScoreKey, float]:
    best: dict[ScoreKey, float] = {}
    for c in candidates:
        key = (c.attack.name, c.pii_type.value)
        best[key] = max(best.get(key, float("-inf")), c.score)
    return best


def _detection_score(detection: Detection, word_scores: dict[str, float]) -> float:
    """How sure the inverter was of the words the detector matched (the weakest of them)."""
    words = [word_scores[w] for w in detection.value.lower().split() if w in word_scores]
    return round(min(words), 4) if words else detection.score


def summarise(state: ScanState) -> Summary:
    return Summary(
        records_scanned=state.records_scanned,
        records_flagged=len(state.findings),
        records_skipped=len(state.problems),
        by_severity=dict(Counter(f.severity.value for f in state.findings)),
        by_pii_type=dict(Counter(t for f in state.findings for t in f.pii_types)),
        records_with_source_text=state.source_counts["with_text"],
        source_pii_records=state.source_counts["with_pii"],
        source_pii_flagged=state.source_counts["with_pii_flagged"],
    )
