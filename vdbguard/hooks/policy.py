"""Which records a guard protects: all of them, or only those that look like they carry PII.

Protecting every vector costs retrieval quality on records that had nothing to hide; a selective
policy spends that cost only where a detector (the stored text) or a trained probe (the vector
itself, Song & Raghunathan, "Information Leakage in Embedding Models", CCS 2020) finds PII.
A policy never edits payloads: the decisions of the last call are kept in ``last_decisions`` so
callers and tests can see what was protected and why (one list per policy object: threads writing
through one guard concurrently overwrite each other's). Records a policy cannot judge (no text and no
probes) are protected: the policy fails closed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

from vdbguard.errors import RecordError, VdbguardError
from vdbguard.records import payload_text

if TYPE_CHECKING:
    from vdbguard.attacks.base import Attack
    from vdbguard.detectors.base import Detector

__all__ = ["Candidate", "Decision", "Policy", "ProtectAll", "ProtectFlagged", "payload_text"]


class Candidate(NamedTuple):
    """One record of a write call, as a policy sees it (before any transform)."""

    record_id: str
    document: str | None = None
    payload: Mapping[str, Any] | None = None
    vector: np.ndarray | None = None  # the first dense vector, float32

    @property
    def text(self) -> str | None:
        if isinstance(self.document, str) and self.document.strip():
            return self.document
        return payload_text(self.payload)


class Decision(NamedTuple):
    """Whether one record is protected, and why (tuples: cheap enough for every record of every write)."""

    record_id: str
    protect: bool
    reason: str
    pii_types: tuple[str, ...] = ()


class Policy(ABC):
    """Decides per record whether the transform runs. ``decide`` must return one Decision per candidate."""

    selective: ClassVar[bool] = True  # False only for policies that protect everything

    def __init__(self) -> None:
        self.last_decisions: list[Decision] = []

    def decide(self, candidates: Sequence[Candidate]) -> list[Decision]:
        decisions = self._decide(candidates)
        if len(decisions) != len(candidates):
            raise VdbguardError(
                f"policy {type(self).__name__} returned {len(decisions)} decisions for {len(candidates)} records"
            )
        self.last_decisions = list(decisions)
        return decisions

    @abstractmethod
    def _decide(self, candidates: Sequence[Candidate]) -> list[Decision]: ...


class ProtectAll(Policy):
    """Every record is protected: the default, and the only choice for space-changing transforms."""

    selective: ClassVar[bool] = False

    def _decide(self, candidates: Sequence[Candidate]) -> list[Decision]:
        return [Decision(c.record_id, True, "protect-all") for c in candidates]


class ProtectFlagged(Policy):
    """Protect records whose text the detector flags, or whose vector a trained probe flags.

    ``attacks`` (optional) are trained attacks from ``vdbguard.attacks.training``; a record is flagged when an
    attack scores a PII type at or above its threshold, recovers a PII value, or (inversion attacks)
    recovers text in which the detector finds PII. A record with neither text nor probes to judge it
    is protected (fail closed). A detector or attack error names the record and stops the write.
    """

    def __init__(self, detector: Detector, attacks: Sequence[Attack] | None = None) -> None:
        super().__init__()
        self.detector = detector
        self.attacks = list(attacks or ())

    def _decide(self, candidates: Sequence[Candidate]) -> list[Decision]:
        found: list[set[str]] = [set() for _ in candidates]
        sources: list[set[str]] = [set() for _ in candidates]
        judged = [False] * len(candidates)
        for i, candidate in enumerate(candidates):
            text = candidate.text
            if text is None:
                continue
            judged[i] = True
            types = self._detect(candidate.record_id, "text", text)
            if types:
                found[i] |= types
                sources[i].add("text")
        if self.attacks:
            self._probe(candidates, found, sources, judged)
        decisions = []
        for candidate, types, where, ok in zip(candidates, found, sources, judged, strict=True):
            if types:
                reason = f"PII flagged in {' and '.join(sorted(where))}"
                decisions.append(Decision(candidate.record_id, True, reason, tuple(sorted(types))))
            elif not ok:
                decisions.append(Decision(candidate.record_id, True, "no text or vector to check: protected"))
            else:
                decisions.append(Decision(candidate.record_id, False, "no PII found"))
        return decisions

    def _detect(self, record_id: str, what: str, text: str) -> set[str]:
        try:
            return {d.pii_type.value for d in self.detector.detect_whole(text)}
        except Exception as exc:
            raise RecordError(record_id, what, f"could not be checked for PII: {type(exc).__name__}: {exc}") from exc

    def _probe(
        self, candidates: Sequence[Candidate], found: list[set[str]], sources: list[set[str]], judged: list[bool]
    ) -> None:
        rows = [i for i, c in enumerate(candidates) if c.vector is not None and c.vector.ndim == 1]
        if not rows:
            return
        vectors = np.stack([candidates[i].vector for i in rows])  # type: ignore[misc]
        texts = [candidates[i].text for i in rows]
        for attack in self.attacks:
            try:
                inferences = attack.infer(vectors, known_texts=texts)
            except Exception as exc:
                bad = self._first_failing(attack, vectors, texts, rows, candidates)
                raise RecordError(
                    bad, "vector", f"could not be probed by {attack.name}: {type(exc).__name__}: {exc}"
                ) from exc
            for i, inference in zip(rows, inferences, strict=True):
                judged[i] = True
                types = {t.value for t, s in inference.type_scores.items() if s >= attack.threshold}
                types |= {t.value for t, _, s in inference.recovered_pii if s >= attack.threshold}
                types |= {t.value for t, b in inference.exposure_bits.items() if b >= attack.threshold}
                if inference.recovered_text:
                    types |= self._detect(candidates[i].record_id, "vector", inference.recovered_text)
                if types:
                    found[i] |= types
                    sources[i].add(f"vector ({attack.name})")

    @staticmethod
    def _first_failing(
        attack: Attack, vectors: np.ndarray, texts: list[str | None], rows: list[int], candidates: Sequence[Candidate]
    ) -> str:
        for n, i in enumerate(rows):
            try:
                attack.infer(vectors[n : n + 1], known_texts=texts[n : n + 1])
            except Exception:
                return candidates[i].record_id
        return ", ".join(candidates[i].record_id for i in rows)
