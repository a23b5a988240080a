"""The engine: stream records from a connector, run every attack, detect PII, emit findings.

Each batch commits to the job's state (``scan.state``) with the connector's cursor, so a scan killed at
any point resumes from the last committed batch without skipping or double-counting a record, and a
re-scan attacks only records that are new or changed since the last run.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import gc
import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from vdbguard.attacks import Attack, Inference
from vdbguard.config import JobSettings, job_default
from vdbguard.connectors.base import Connector
from vdbguard.detectors.base import Detection, Detector
from vdbguard.detectors.validators import may_hold
from vdbguard.embedders import SAME_TEXT, Embedder
from vdbguard.errors import RecordError, VdbguardError
from vdbguard.masking import mask_if
from vdbguard.pii import AnyPiiType, PiiType, detected_only, pii_type_of
from vdbguard.progress import ProgressSink, Silent
from vdbguard.records import Batch, VectorRecord, record_digest
from vdbguard.reports.schema import (
    STORED_TEXT,
    VECTOR,
    Coverage,
    Evidence,
    Finding,
    InferredAttribute,
    RecordProblem,
    RunSummary,
    Severity,
    Summary,
)
from vdbguard.reports.spool import FindingSpool
from vdbguard.scan.read_ahead import read_ahead
from vdbguard.scan.state import DUPLICATE_ID, RecordRow, Run, ScanStore, Seen, store_at, verdict_key
from vdbguard.scan.state_file import StateFileError
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
    PiiType.SECRET: Severity.HIGH,
    PiiType.IP_ADDRESS: Severity.LOW,  # a device more than a person, and in every log line
    PiiType.PASSPORT: Severity.HIGH,
    PiiType.DRIVER_LICENSE: Severity.HIGH,
    PiiType.NATIONAL_ID: Severity.HIGH,
}
CUSTOM_SEVERITY = Severity.MEDIUM  # a user's type whose identifier names no severity


def severity_of(
    pii_types: set[AnyPiiType], recovered_verbatim: bool, overrides: Mapping[str, Severity] | None = None
) -> Severity:
    """Worst type sets the base; a person linked to any other attribute, or PII recovered verbatim, is one worse.

    ``overrides``: a job's own base severity per type (e.g. names in HR data are high), and each of the user's
    own types' (``CUSTOM:NAME``), which otherwise count as medium.
    """
    table: Mapping[str, Severity] = {**TYPE_SEVERITY, **(overrides or {})}
    base = max((table.get(t, CUSTOM_SEVERITY) for t in pii_types), key=lambda s: s.rank, default=Severity.LOW)
    linked = PiiType.PERSON in pii_types and len(pii_types) > 1
    steps = int(linked) + int(recovered_verbatim)
    return list(Severity)[min(base.rank + steps, Severity.CRITICAL.rank)]


STORED_TEXT_ATTACK = "stored-text"  # the evidence's "attack": no attack, the text the store keeps in plain sight
RECOVERED_KEPT = 50_000  # recovered texts whose detections a scan remembers; each is a short bag of words


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
        policy: FindingPolicy | None = None,
        source_embedder: Embedder | None = None,
        finding_kinds: Iterable[str] = (VECTOR,),
        detected: dict[str, list[Detection]] | None = None,
    ) -> None:
        """``detected``: what the detector already found in some texts (owner-side calibration labelled the stored
        ones and read what the inversions recovered), so the scan does not read them twice; shared, not copied:
        the scanner adds the recovered texts it detects."""
        if not attacks:
            raise VdbguardError("no attacks to run", "pass at least one --attack")
        self.attacks = list(attacks)
        self.detector = detector
        self._detected: dict[str, list[Detection]] = {}
        self._recovered_before: dict[str, list[Detection]] = {} if detected is None else detected
        self.dimension = dimension
        self.mask_pii = mask_pii
        self.verdict = verdict
        self.policy = policy
        self.source_embedder = source_embedder  # the store's own model: re-embeds a flagged record's text
        self.finding_kinds = frozenset(finding_kinds)

    def evidence_scores(self, records: Sequence[VectorRecord]) -> list[dict[ScoreKey, float]]:
        """Per record, each attack's best score per PII type before any threshold (to calibrate on)."""
        vectors = [record.checked_vector(self.dimension) for record in records]
        inferred = self._infer(records, vectors)
        with self._detected_in(_recovered_texts(inferred), set()):
            return [_best_scores(self._candidates(row)) for row in inferred]

    def _infer(self, records: Sequence[VectorRecord], vectors: Sequence[np.ndarray]) -> list[list[Inference]]:
        """Every attack on the whole batch at once; one list of inferences (one per attack) per record."""
        matrix = np.stack(vectors)
        known = [record.source_text for record in records]
        per_attack = [attack.infer(matrix, known_texts=known) for attack in self.attacks]
        return [list(row) for row in zip(*per_attack, strict=True)]

    def scan(self, connector: Connector, *, deep: DeepTier | None = None, **options: Any) -> ScanResult:
        """Scan every record, attacking only what the state does not already hold a current verdict for.

        ``options`` are :func:`scan_incrementally`'s (``state_path``, ``sample``, ``batch_size``...).
        """
        key = verdict_key({**self.verdict_settings(), "deep": deep and deep.settings()})
        return scan_incrementally(connector, lambda: self, key, deep=deep, **options)

    def verdict_settings(self) -> dict[str, Any]:
        """Everything in this scanner that changes a verdict, for the state's key."""
        return {
            "attacks": [
                (a.name, a.version, round(a.threshold, 6), sorted(a.verdict_settings().items())) for a in self.attacks
            ],
            "detector": self.detector.identity(),
            "dimension": self.dimension,
            "masked": self.mask_pii,
            "verdict": None if self.verdict is None else sorted((str(k), v) for k, v in self.verdict.cutoffs.items()),
            "policy": self.policy.settings() if self.policy else None,
            "source_check": self.source_embedder is not None,
            "kinds": sorted(self.finding_kinds),
        }

    def attack_records(
        self, records: Sequence[VectorRecord], digests: Sequence[bytes] | None = None
    ) -> list[RecordRow]:
        """Run the attacks on records the state had no current verdict for; one row per record. ``digests``: the
        records' as their batch gave them (``Batch.digests``), for the state to recognise them next run."""
        digests = [record_digest(record) for record in records] if digests is None else digests
        rows, usable, vectors = [], [], []
        for record, digest in zip(records, digests, strict=True):
            try:
                vectors.append(record.checked_vector(self.dimension, attackable=True))
                usable.append((record, digest))
            except RecordError as exc:
                problem = RecordProblem(record_id=exc.record_id, field=exc.field, problem=exc.problem)
                rows.append(RecordRow(record.id, digest, attacked=True, problem=problem))
        if usable:
            inferred = self._infer([record for record, _ in usable], vectors)
            stored = {text for record, _ in usable for _, text in self._stored(record)}
            stored |= {text for record, _ in usable if (text := record.source_text) is not None}
            with self._detected_in(_recovered_texts(inferred), stored):
                claims = [self._allowed(self._candidates(inferences)) for inferences in inferred]
                decided = [
                    self._decide(candidates, probabilities) if self._reports_vector(record) else []
                    for (record, _), candidates, probabilities in zip(usable, claims, self._fused(claims), strict=True)
                ]
                matches = self._vectors_match(
                    [
                        record if self._unconfirmed(record, evidence) else None
                        for (record, _), evidence in zip(usable, decided, strict=True)
                    ]
                )
                for (record, digest), inferences, candidates, evidence, match in zip(
                    usable, inferred, claims, decided, matches, strict=True
                ):
                    rows.append(self._row(record, digest, inferences, candidates, evidence, match))
        return rows

    @contextlib.contextmanager
    def _detected_in(self, recovered: set[str], stored: set[str]) -> Iterator[None]:
        """Detect PII in a page's texts with one ``detect_many`` call (spaCy's pipe), for ``_detect`` to look up.

        Inversions of similar vectors recover the same word bags page after page, so recovered texts are
        remembered across pages (the latest ``RECOVERED_KEPT``); stored texts are rarely repeated, and long."""
        before = self._recovered_before
        texts = recovered | stored
        fresh = sorted(text for text in texts if text not in before)
        detected = dict(zip(fresh, self.detector.detect_many(fresh), strict=True))
        before.update((text, detected[text]) for text in recovered if text in detected)
        detected.update((text, before[text]) for text in texts if text not in detected)
        self._detected = detected
        for _ in range(len(before) - RECOVERED_KEPT):
            del before[next(iter(before))]
        try:
            yield
        finally:
            self._detected = {}

    def _allowed(self, candidates: list[Candidate]) -> list[Candidate]:
        if self.policy is None:
            return candidates
        return [c for c in candidates if c.value is None or not self.policy.allows_value(c.value)]

    def _fused(self, claims: Sequence[list[Candidate]]) -> list[dict[str, float] | None]:
        """The stacked verdict's probability per PII type for each record, in one call for the batch."""
        if self.verdict is None:
            return [None] * len(claims)
        probabilities = self.verdict.probabilities([_best_scores(candidates) for candidates in claims])
        # rounded: a batch's matrix product can differ from a single row's in the last bit, and a resumed scan
        # (other batches) must judge each record exactly as a clean one does
        columns = {pii_type: p.tolist() for pii_type, p in probabilities.items()}
        return [{pii_type: round(p[i], 9) for pii_type, p in columns.items()} for i in range(len(claims))]

    def _detect(self, text: str) -> list[Detection]:
        """Detections of ``text``, from the batch's ``detect_many`` where it was in the batch."""
        detections = self._detected.get(text)
        return self.detector.detect(text) if detections is None else detections

    def _candidates(self, inferences: list[Inference]) -> list[Candidate]:
        """Every attack's claim about one record, before any threshold."""
        found: list[Candidate] = []
        for attack, inference in zip(self.attacks, inferences, strict=True):
            found += [Candidate(attack, t, score, PROBED, measure=score) for t, score in inference.type_scores.items()]
            found += [Candidate(attack, t, score, RECOVERED, value) for t, value, score in inference.recovered_pii]
            for t, bits in inference.exposure_bits.items():
                found.append(Candidate(attack, t, round(bits, 2), EXPOSED, measure=bits))
            if inference.recovered_text:
                word_scores = dict(inference.recovered_tokens)
                for hit in self._detect(inference.recovered_text):
                    score = _detection_score(hit, word_scores)
                    found.append(Candidate(attack, hit.pii_type, score, DETECTED, hit.value, recognizer=hit.recognizer))
        return found

    def _decide(self, candidates: list[Candidate], probabilities: dict[str, float] | None) -> list[Evidence]:
        evidence = [c.evidence(self.mask_pii) for c in candidates if c.over_threshold]
        if self.verdict is None or probabilities is None:
            return evidence
        fused = []
        for pii_type, p in probabilities.items():
            cutoff = self.verdict.cutoffs[pii_type]
            if p >= cutoff:
                attacks = ", ".join(self.verdict.models[pii_type].attacks)
                detail = f"stacked model over {attacks}: P(text contains {pii_type}) = {p:.3f}"
                fused.append(Evidence(attack=FUSED, pii_type=pii_type, score=p, threshold=cutoff, detail=detail))
        decided = {e.pii_type for e in fused}
        # types no stacked model can weigh (a user's own, those only the detector finds) count as the attacks
        # that recovered them decide, or a recovered employee id would never be reported
        alone = [e for e in evidence if e.pii_type not in self.verdict.models and detected_only(e.pii_type)]
        return fused + [e for e in evidence if e.pii_type in decided] + alone

    def _reports_vector(self, record: VectorRecord) -> bool:
        return VECTOR in self.finding_kinds and (self.policy is None or not self.policy.allows_record(record.id))

    def _row(
        self,
        record: VectorRecord,
        digest: bytes,
        inferences: list[Inference],
        candidates: list[Candidate],
        evidence: list[Evidence],
        matches_source: bool | None,
    ) -> RecordRow:
        text = record.source_text
        source_types = set() if text is None else {d.pii_type for d in self._detect(text)}
        row = RecordRow(record.id, digest, attacked=True, has_text=text is not None, has_pii=bool(source_types))
        if self.policy is None or not self.policy.allows_record(record.id):
            if evidence:
                row.finding = self._finding(record, inferences, source_types, candidates, evidence, matches_source)
            row.text_finding = self._stored_text_finding(record)
        return row

    def _stored(self, record: VectorRecord) -> list[tuple[str, str]]:
        return record.stored_texts() if STORED_TEXT in self.finding_kinds else []

    def _stored_text_finding(self, record: VectorRecord) -> Finding | None:
        """PII or secrets the record keeps in plain text, found by the detector in each of its stored fields."""
        found = [(field, d) for field, text in self._stored(record) for d in self._detect(text)]
        if self.policy is not None:
            found = [(field, d) for field, d in found if not self.policy.allows_value(d.value)]
        if not found:
            return None
        best: dict[AnyPiiType, tuple[str, Detection]] = {}
        for field, detection in found:
            if detection.pii_type not in best or detection.score > best[detection.pii_type][1].score:
                best[detection.pii_type] = (field, detection)
        threshold = self.detector.cutoff
        evidence = [
            Evidence(
                attack=STORED_TEXT_ATTACK,
                pii_type=pii_type.value,
                score=detection.score,
                threshold=threshold,
                detail=f"{detection.recognizer} found {pii_type.value} in {field}",
                recovered=mask_if(detection.value, self.mask_pii or pii_type is PiiType.SECRET),
            )
            for pii_type, (field, detection) in sorted(best.items())
        ]
        overrides = self._severity_overrides()
        return Finding(
            record_id=record.id,
            kind=STORED_TEXT,
            fields=sorted({field for field, _ in found}),
            collection=record.collection,
            namespace=record.namespace,
            severity=severity_of(set(best), recovered_verbatim=False, overrides=overrides),
            pii_types=sorted(t.value for t in best),
            evidence=evidence,
        )

    def _finding(
        self,
        record: VectorRecord,
        inferences: list[Inference],
        source_types: set[AnyPiiType],
        candidates: list[Candidate],
        evidence: list[Evidence],
        matches: bool | None,
    ) -> Finding:
        pii_words = {word for c in candidates if c.value is not None for word in _WORD.findall(c.value.lower())}
        secrets = [c.value.lower() for c in candidates if c.value and c.pii_type is PiiType.SECRET]
        secret_words = {word for secret in secrets for word in _WORD.findall(secret)}
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
        flagged = {pii_type_of(e.pii_type) for e in evidence}
        lowered = text.lower() if text is not None else ""
        recovered_values = [
            c.value for c in candidates if c.value is not None and c.pii_type in flagged and c.over_threshold
        ]
        verbatim = any(value.lower() in lowered for value in recovered_values)
        overrides = self._severity_overrides()
        severity = severity_of(flagged, recovered_verbatim=bool(text) and verbatim, overrides=overrides)
        if matches:
            severity = Severity.LOW  # the vector holds no more than a text that the detector and validators clear
        return Finding(
            record_id=record.id,
            collection=record.collection,
            namespace=record.namespace,
            severity=severity,
            vector_matches_source=matches,
            pii_types=sorted(t.value for t in flagged),
            evidence=evidence,
            recovered_words=[
                mask_if(word, (self.mask_pii and word.lower() in pii_words) or word.lower() in secret_words)
                for word in recovered_words
            ],
            confirmed_by_source=None if text is None else {t.value: t in source_types for t in sorted(flagged)},
            recovered_words_in_source=None
            if text is None
            else sum(1 for word in set(recovered_words) if word in lowered),
            inferred_attributes=attributes,
        )

    def _severity_overrides(self) -> dict[str, Severity]:
        """The base severity of the user's own types (their identifiers name it), then the job's own per type."""
        return {**self.detector.severities(), **(self.policy.severity_by_type if self.policy else {})}

    def _unconfirmed(self, record: VectorRecord, evidence: Sequence[Evidence]) -> bool:
        """Whether the record is flagged for types that neither the detector nor a validator finds in its stored
        text: only there does it matter whether the vector is that text's own (then it holds no more)."""
        text = record.source_text
        if not evidence or text is None:
            return False
        flagged = {pii_type_of(e.pii_type) for e in evidence}
        found = {d.pii_type for d in self._detect(text)}
        return not flagged & found and not any(may_hold(t, text) for t in flagged)

    def _vectors_match(self, records: Sequence[VectorRecord | None]) -> list[bool | None]:
        """Per record given, whether its vector is the store's model's vector of its stored text, in one
        ``encode`` for the page (None: not asked, or not checked)."""
        model = self.source_embedder
        checked = {
            row: (record.source_text, vector)
            for row, record in enumerate(records)
            if model is not None
            and record is not None
            and record.source_text is not None
            and record.vector is not None
            and (vector := np.asarray(record.vector, dtype=np.float32)).shape == (model.dimension,)
        }
        matches: list[bool | None] = [None] * len(records)
        if model is None or not checked:
            return matches
        embedded = model.encode([text or "" for text, _ in checked.values()])
        for (row, (_, vector)), own in zip(checked.items(), embedded, strict=True):
            matches[row] = bool(float(own @ vector) / max(float(np.linalg.norm(vector)), 1e-12) >= SAME_TEXT)
        return matches


_WORD = re.compile(r"[^\W_]+")
DEEP_CHUNK = 16


class FindingPolicy(Protocol):
    """What a job's allow list and severity policy decide (``vdbguard.config`` builds one)."""

    severity_by_type: Mapping[PiiType, Severity]

    def allows_value(self, value: str) -> bool: ...

    def allows_record(self, record_id: str) -> bool: ...

    def settings(self) -> Any: ...


@dataclass
class DeepTier:
    """Slower attacks on what the fast tier flags plus a random share of the rest, within a budget per run.

    ``scanner`` is a Scanner, or a callable that builds one when the deep tier first runs.
    """

    scanner: Scanner | Callable[[], Scanner]
    sample: float = 0.0
    max_records: int | None = None
    max_seconds: float | None = None
    attack_names: Sequence[str] = ()

    def __post_init__(self) -> None:
        if isinstance(self.scanner, Scanner):
            self.attack_names = [a.name for a in self.scanner.attacks]

    @property
    def budgeted(self) -> bool:
        return self.max_records is not None or self.max_seconds is not None

    def deep_scanner(self) -> Scanner:
        if not isinstance(self.scanner, Scanner):
            self.scanner = self.scanner()
        return self.scanner

    def settings(self) -> dict[str, Any]:
        attacks = self.scanner.verdict_settings() if isinstance(self.scanner, Scanner) else list(self.attack_names)
        return {"scanner": attacks, "sample": self.sample}


@dataclass
class ScanResult:
    findings: list[Finding] | FindingSpool  # a spool on disk past IN_MEMORY_FINDINGS
    problems: list[RecordProblem]
    summary: Summary
    coverage: Coverage
    history: list[RunSummary]

    @property
    def records_scanned(self) -> int:
        return self.summary.records_scanned


class Executor(Protocol):
    """Where a scan's fast tier attacks each page's records; the loop (``scan_incrementally``) does the rest: reading,
    the state, duplicate ids, the deep tier, commits. ``pages_ahead``: pages the loop hands over before it waits for
    the first one's rows (0: attacked as handed over)."""

    pages_ahead: int

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...

    def submit(
        self, scanner: Callable[[], Scanner], records: Sequence[VectorRecord], digests: Sequence[bytes]
    ) -> Callable[[], list[RecordRow]]:
        """Start attacking ``records`` with the scanner ``scanner()`` returns (built once, on first call); the
        callable returned gives their rows, in order."""
        ...


class InProcess:
    """The fast tier attacked in this process, page by page, as the loop reads them."""

    pages_ahead = 0

    def __enter__(self) -> InProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(
        self, scanner: Callable[[], Scanner], records: Sequence[VectorRecord], digests: Sequence[bytes]
    ) -> Callable[[], list[RecordRow]]:
        rows = scanner().attack_records(records, digests)
        return lambda: rows


@dataclass
class _Page:
    """A page read and classified, its fresh records handed to the executor, waiting for their rows to commit."""

    cursor: str | None
    size: int
    records: list[VectorRecord]
    rows: Callable[[], list[RecordRow]]
    unsampled: list[RecordRow]
    carried: list[str]
    originals: dict[str, str]  # a second record's key -> the id it shares
    taken: dict[str, bytes | None]  # what committing it makes the run hold: key -> digest


class _BatchRun:
    """One run's per-page work: carry over what is current, hand the rest to the executor, deep-attack within
    budget, commit in reading order."""

    def __init__(
        self, build: Callable[[], Scanner], run: Run, sample: float, deep: DeepTier | None, executor: Executor
    ) -> None:
        self.build, self.run, self.sample, self.deep, self.executor = build, run, sample, deep, executor
        self._scanner: Scanner | None = None
        self.started = time.monotonic()
        self.done_before = run.count()  # a resumed run's earlier batches are not this process's speed
        self.batches = 0
        self.attacked = 0
        self.pending: collections.deque[_Page] = collections.deque()
        self.in_flight: dict[str, bytes | None] = {}  # what the pending pages will make the run hold

    def scan_batch(self, batch: Batch) -> Iterator[int]:
        """Hand ``batch`` over; yields the size of each page committed meanwhile (the executor's earlier ones)."""
        ids, digests = batch.ids, batch.digests()
        seen = self._lookup(ids, digests)
        keys, duplicates = _keys_with_duplicates(ids, digests, seen.held)
        if duplicates:
            more = self._lookup([keys[i] for i in duplicates], [digests[i] for i in duplicates])
            seen.held.update(more.held)
            seen.judged.update(more.judged)
            seen.deep_pending.update(more.deep_pending)
        if seen.deep_pending and self.deep is not None and self.deep.budgeted:
            # whether a record still waiting for the deep tier is attacked again depends on the budget the pages
            # before it spent: commit them first, so every executor decides as the in-process one does
            yield from self.drain()
        self.pending.append(self._handed_over(batch, digests, keys, duplicates, seen))
        while len(self.pending) > self.executor.pages_ahead:
            yield self._commit(self.pending.popleft())

    def drain(self) -> Iterator[int]:
        while self.pending:
            yield self._commit(self.pending.popleft())

    def _lookup(self, ids: list[str], digests: list[bytes]) -> Seen:
        """The state's answer, as it will be once the pages handed over before this one are committed."""
        seen = self.run.lookup(ids, digests)
        for record_id in ids:
            if record_id in self.in_flight:
                seen.held.setdefault(record_id, self.in_flight[record_id])
        return seen

    def _handed_over(
        self, batch: Batch, digests: list[bytes], keys: list[str], duplicates: list[int], seen: Seen
    ) -> _Page:
        """The page classified by what the state holds (``keys``: the id each row is judged by); its fresh records
        handed to the executor."""
        ids = batch.ids
        fresh, carried, unsampled = [], [], []
        for row, (record_id, digest) in enumerate(zip(keys, digests, strict=True)):
            current = seen.judged.get(record_id) == digest and not (
                record_id in seen.deep_pending and self._deep_budget_left()  # attacked again, for the deep tier
            )
            committed = record_id in seen.held
            kind = classify(record_id, committed=committed, current=current, run_id=self.run.id, sample=self.sample)
            if kind == CARRIED:
                carried.append(record_id)
            elif kind == UNSAMPLED:
                unsampled.append(RecordRow(record_id, None, attacked=False))
            elif kind == FRESH:
                fresh.append(row)
        records = batch.take(fresh)  # built only for the rows to attack
        records = [
            record if record.id == keys[row] else dataclasses.replace(record, id=keys[row])
            for row, record in zip(fresh, records, strict=True)
        ]
        fresh_digests = [digests[i] for i in fresh]
        rows = self.executor.submit(lambda: self.scanner, records, fresh_digests) if fresh else lambda: []
        taken: dict[str, bytes | None] = {keys[i]: digests[i] for i in fresh}
        taken.update((row.record_id, None) for row in unsampled)
        self.in_flight.update(taken)
        originals = {keys[i]: ids[i] for i in duplicates}
        return _Page(batch.cursor, len(batch), records, rows, unsampled, carried, originals, taken)

    def _commit(self, page: _Page) -> int:
        rows = page.rows()
        name_duplicates(rows, page.originals)
        if self.deep is not None:
            self._deep(page.records, rows)
        self.run.commit_batch(page.cursor, rows + page.unsampled, page.carried)
        self.attacked += len(page.records)
        for record_id in page.taken:
            self.in_flight.pop(record_id, None)
        self.batches += 1
        return page.size

    @property
    def scanner(self) -> Scanner:
        if self._scanner is None:
            self._scanner = self.build()
            self.started = time.monotonic()  # the estimate's rate is the scan's, not loading or training the attacks
        return self._scanner

    def _deep_budget_left(self) -> bool:
        deep, run = self.deep, self.run
        if deep is None:
            return False
        within = (deep.max_records is None or run.deep_records < deep.max_records) and (
            deep.max_seconds is None or run.deep_seconds < deep.max_seconds
        )
        run.deep_exhausted = run.deep_exhausted or not within
        return within

    def _deep(self, records: Sequence[VectorRecord], rows: list[RecordRow]) -> None:
        assert self.deep is not None
        by_id = {r.id: r for r in records}
        wanted = [
            row
            for row in rows
            if row.problem is None and (row.finding is not None or record_fraction(row.record_id, 0) < self.deep.sample)
        ]
        for row in wanted:
            row.deep_wanted = True
        while wanted and self._deep_budget_left():
            size = self._deep_chunk()
            chunk, wanted = wanted[:size], wanted[size:]
            started = time.monotonic()
            deep_rows = self.deep.deep_scanner().attack_records([by_id[row.record_id] for row in chunk])
            self.run.deep_seconds += time.monotonic() - started
            self.run.deep_records += len(chunk)
            for row, deep_row in zip(chunk, deep_rows, strict=True):
                row.deep = True
                row.finding = merge_findings(row.finding, deep_row.finding)

    def _deep_chunk(self) -> int:
        """Records per deep call: up to DEEP_CHUNK, since inverters batch (adversarial decoding drafts only for 8
        or more at once), but no more than the record budget allows or the time budget fits at the rate so far."""
        deep, run = self.deep, self.run
        assert deep is not None
        size = DEEP_CHUNK
        if deep.max_records is not None:
            size = min(size, deep.max_records - run.deep_records)
        if deep.max_seconds is not None:
            per_record = run.deep_seconds / run.deep_records if run.deep_records else deep.max_seconds
            size = min(size, int((deep.max_seconds - run.deep_seconds) / max(per_record, 1e-9)))
        return max(size, 1)

    def announce_plan(self, total: int | None) -> None:
        """Before the first batch: what the state already holds, and the time the last run's rate predicts."""
        known, rate = self.run.previous_rate()
        if self.run.resumed:
            plan.info("plan: resuming run %d after %d records", self.run.id, self.run.count())
        elif known and total:
            estimate = f"; new or changed records go at about {rate:.0f}/s (last run)" if rate else ""
            plan.info(
                "plan: %d records in the collection, %d with a verdict from the last run%s", total, known, estimate
            )

    def announce_estimate(self, total: int | None) -> None:
        """After the first batch: how long the rest should take at the rate just measured."""
        if self.batches != 1 or not total:
            return
        elapsed = time.monotonic() - self.started
        done = self.run.count()
        rate = (done - self.done_before) / elapsed if elapsed > 0 else 0.0
        remaining = max(total - done, 0)
        eta = f"{remaining / rate / 60:.1f} min" if rate else "unknown"
        budget = ""
        if self.deep is not None:
            limits = [
                f"{self.deep.max_records} records" if self.deep.max_records else "",
                f"{self.deep.max_seconds:.0f} s" if self.deep.max_seconds else "",
            ]
            budget = f"; deep tier within {' and '.join(x for x in limits if x) or 'no budget'}"
        plan.info(
            "plan: %d of %d records read, %d attacked; at %.0f records/s the rest takes about %s%s",
            done,
            total,
            self.attacked,
            rate,
            eta,
            budget,
        )


plan = logging.getLogger("vdbguard.scan.plan")


def record_fraction(record_id: str, salt: int) -> float:
    """A stable pseudo-random number in [0, 1) per record (and run), for sampling without state."""
    digest = hashlib.blake2b(f"{salt}:{record_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest) / 2**64


FRESH, CARRIED, UNSAMPLED = "fresh", "carried", "unsampled"


def duplicate_id(record_id: str, digest: bytes) -> str:
    """The id a second record under ``record_id`` (another vector, payload or text) is judged and reported by:
    stable while that record stays as it is, so a re-scan carries its verdict over."""
    return f"{record_id}#dup-{digest[:4].hex()}"


def _keys_with_duplicates(
    ids: Sequence[str], digests: Sequence[bytes], held: Mapping[str, bytes | None]
) -> tuple[list[str], list[int]]:
    """The id each row is judged by, and the rows that are a second record under an id: one the run already took
    (``held``: with the digest it took), or that came earlier in this page, with other content."""
    keys, duplicates, first = list(ids), [], {}
    for row, (record_id, digest) in enumerate(zip(ids, digests, strict=True)):
        taken = held[record_id] if record_id in held else first.get(record_id)
        if taken is not None and taken != digest:
            keys[row] = duplicate_id(record_id, digest)
            duplicates.append(row)
        else:
            first.setdefault(record_id, digest)
    return keys, duplicates


def name_duplicates(rows: Sequence[RecordRow], originals: Mapping[str, str]) -> None:
    """Say of each attacked record held under another record's id (``originals``: its key -> that id) what it is."""
    for row in rows:
        if row.record_id in originals and row.problem is None:
            row.problem = RecordProblem(
                record_id=row.record_id,
                field=DUPLICATE_ID,
                problem=f"the store holds another record under the id {originals[row.record_id]!r} with a different "
                f"vector, payload or text: this one was attacked too, and is reported as {row.record_id!r}",
            )


def classify(record_id: str, *, committed: bool, current: bool, run_id: int, sample: float) -> str | None:
    """What a scan does with one row it read, the same in every executor: nothing when this run already
    attacked it (a duplicate id, or a page the store served twice), carry a current verdict, leave out a
    row the sample does not draw, attack the rest. A row carried over and served again is carried again, or
    attacked if it comes changed (a store paged live under writes serves the newer content second)."""
    if committed:
        return None
    if current:
        return CARRIED
    if sample < 1.0 and record_fraction(record_id, run_id) >= sample:
        return UNSAMPLED
    return FRESH


def merge_findings(fast: Finding | None, deep: Finding | None) -> Finding | None:
    """One finding per record: the deep tier's evidence added to the fast tier's."""
    if fast is None or deep is None:
        return fast or deep
    return fast.model_copy(
        update={
            "severity": max(fast.severity, deep.severity, key=lambda s: s.rank),
            "pii_types": sorted(set(fast.pii_types) | set(deep.pii_types)),
            "evidence": fast.evidence + deep.evidence,
            "recovered_words": fast.recovered_words + deep.recovered_words,
            "confirmed_by_source": None
            if fast.confirmed_by_source is None
            else {**fast.confirmed_by_source, **(deep.confirmed_by_source or {})},
            "inferred_attributes": fast.inferred_attributes + deep.inferred_attributes,
            "vector_matches_source": fast.vector_matches_source
            if fast.vector_matches_source is not None
            else deep.vector_matches_source,
        }
    )


def scan_incrementally(
    connector: Connector,
    build: Callable[[], Scanner],
    key: str,
    *,
    batch_size: int = job_default(JobSettings, "batch_size"),
    state_path: Path | None = None,
    store: ScanStore | None = None,
    target: str = "",
    total: int | None = None,
    progress: ProgressSink | None = None,
    sample: float = 1.0,
    deep: DeepTier | None = None,
    executor: Executor | None = None,
) -> ScanResult:
    """The scan loop, the same whoever attacks: ``executor`` (in this process by default) runs the fast tier on
    what the loop hands it. ``build`` makes the scanner (loading or training attacks, calibrating) and is called
    only once a record needs attacking, so a re-scan of an unchanged collection loads no model at all.
    ``key`` must change whenever the scanner ``build`` makes would judge a record differently.

    ``state_path``: the job's SQLite state (see ``scan.state``); without it a temporary one; ``store``: that state
    when the caller holds it open. ``sample``: the share of new or changed records the fast tier attacks this run.
    """
    progress = progress or Silent()
    executor = executor or InProcess()
    reading = threading.Lock()
    froze = False

    def build_between_pages() -> Scanner:
        nonlocal froze
        with reading:  # calibrating on the store's own text reads the connector the pages come from
            scanner = build()
        froze = froze or freeze_long_lived()
        return scanner

    try:
        with store_at(state_path, store) as held, resumable_failures(held, target, key, connector) as run:
            if (carried := carried_unread(run, progress, total, sample, deep)) is not None:
                return carried
            batch_run = _BatchRun(build_between_pages, run, sample, deep, executor)
            batch_run.announce_plan(total)
            with executor, progress.task("Scanning records", total) as advance:
                if run.resumed:
                    advance(run.count())
                pages = connector.iter_batches(batch_size=batch_size, resume_from=run.cursor)
                for batch in read_ahead(pages, lock=reading):
                    for size in batch_run.scan_batch(batch):
                        advance(size)
                        batch_run.announce_estimate(total)
                for size in batch_run.drain():
                    advance(size)
                    batch_run.announce_estimate(total)
            return finish_run(run, sample, deep)
    finally:
        if froze:
            gc.unfreeze()


@contextlib.contextmanager
def resumable_failures(store: ScanStore, target: str, key: str, connector: Connector) -> Iterator[Run]:
    """The run begun for this scan; an error that stops it once it has committed records says it is resumable."""
    run = store.begin(target, key, connector.content_version())
    try:
        yield run
    except StateFileError:
        raise  # the same command meets the same file again
    except VdbguardError as exc:
        with contextlib.suppress(Exception):  # the state itself may be what failed
            exc.resumable = run.count() > 0
        raise


def freeze_long_lived() -> bool:
    """Exempt every object alive now (the models a scanner just loaded: half a million of them) from the cyclic
    garbage collector, which otherwise walks them all at each full collection, a tenth of a first scan's time.
    False when someone else froze objects already: they own the freeze."""
    if gc.get_freeze_count():
        return False
    gc.freeze()
    return True


def carried_unread(
    run: Run, progress: ProgressSink, total: int | None, sample: float, deep: DeepTier | None
) -> ScanResult | None:
    """The run's outcome when the store names the content the last run read and every verdict carries over
    (``Run.carry_unchanged``), without reading a page; None when the run has to read, the same in every executor."""
    if not run.carry_unchanged():
        return None
    with progress.task("Scanning records", total) as advance:
        advance(run.count())
    return finish_run(run, sample, deep)


def finish_run(run: Run, sample: float, deep: DeepTier | None) -> ScanResult:
    """Close the run (resolving the findings of deleted records) and read its outcome from the state."""
    run.settle()
    findings = run.findings()
    summary = run.summary(findings)
    attacked, carried, deep_records, flagged_by_fast, flagged_covered = run.count_each(
        f"attacked_run = {run.id:d}",
        f"attacked_run IS NOT NULL AND attacked_run != {run.id:d}",
        "deep",
        "deep_wanted AND finding IS NOT NULL",
        "deep AND deep_wanted AND finding IS NOT NULL",
    )
    run.finish(summary, attacked)
    return ScanResult(
        findings=findings,
        problems=run.problems(),
        summary=summary,
        coverage=Coverage(
            records_in_collection=summary.records_scanned,
            records_attacked=attacked,
            records_carried_over=carried,
            fast_tier_sample=sample,
            deep_attacks=[] if deep is None else list(deep.attack_names),
            deep_records=deep_records,
            deep_flagged_by_fast=flagged_by_fast,
            deep_flagged_covered=flagged_covered,
            deep_budget_exhausted=run.deep_exhausted,
            findings_resolved=run.findings_resolved(),
        ),
        history=run.history(),
    )


FUSED = "fused"


PROBED = "probe estimates P(text contains {type}) = {measure:.2f}"
RECOVERED = "{attack} recovered a {type} value from the vector"
EXPOSED = "the stored {type} is exposed by {measure:.1f} bits (Carlini et al.)"
DETECTED = "{recognizer} found {type} in the recovered words"


@dataclass(slots=True)
class Candidate:
    """One attack's claim that a record holds a PII type, with its score, before any threshold.

    ``why`` is one of the templates above: a page makes a dozen claims a record and reports few, so the
    detail is written only for evidence."""

    attack: Attack
    pii_type: AnyPiiType
    score: float
    why: str
    value: str | None = None
    measure: float = 0.0  # the number the detail shows
    recognizer: str = ""

    @property
    def over_threshold(self) -> bool:
        return self.score >= self.attack.threshold

    @property
    def detail(self) -> str:
        return self.why.format(
            type=self.pii_type.value, measure=self.measure, attack=self.attack.name, recognizer=self.recognizer
        )

    def evidence(self, mask_pii: bool) -> Evidence:
        return Evidence(
            attack=self.attack.name,
            pii_type=self.pii_type.value,
            score=self.score,
            threshold=self.attack.threshold,
            detail=self.detail,
            recovered=None if self.value is None else mask_if(self.value, mask_pii or self.pii_type is PiiType.SECRET),
        )


def _recovered_texts(inferred: Sequence[Sequence[Inference]]) -> set[str]:
    return {i.recovered_text for inferences in inferred for i in inferences if i.recovered_text}


def _best_scores(candidates: Sequence[Candidate]) -> dict[ScoreKey, float]:
    best: dict[ScoreKey, float] = {}
    for c in candidates:
        key = (c.attack.name, str(c.pii_type))  # str(): the member's value, several times faster than .value
        best[key] = max(best.get(key, float("-inf")), c.score)
    return best


def _detection_score(detection: Detection, word_scores: dict[str, float]) -> float:
    """How sure the inverter was of the words the detector matched (the weakest of them)."""
    words = [word_scores[w] for w in detection.value.lower().split() if w in word_scores]
    return round(min(words), 4) if words else detection.score
