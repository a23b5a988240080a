"""`vdbguard subject find / erase`: which records relate to one person, and deleting them with an audit trail.

A GDPR access or erasure request names a person, not record ids; and in a vector store the text is often
redacted, summarised or gone while the vector still encodes the name (seed 001). Each record is tested three
ways, and each way that fires adds its own evidence (masked unless asked otherwise):

- **payload**: the person's full name, email or phone appears in the record's stored text or payload
  (case, spacing and "Last, First" order ignored; a phone is matched on its digits).
- **membership**: the vector sits closer to probe sentences about the person ("a note about Jane Roe") than
  a null of random identities does, row by row (``attacks/membership.py``). One query compares the person
  with every row, so the threshold is family-wise: the ``1 - alpha`` quantile, over the null identities, of
  the largest per-row z any of them reaches. A person absent from the store is reported with a record at
  most ``alpha`` of the time, however many records the store holds.
- **inversion**: an inversion attack run on the vector recovers every part of the name, or the email.

Erasure deletes the records found, only after a dry run and only with ``--yes``, and appends to a JSON-lines
audit log (who, when, which ids, which evidence) that names the person only by SHA-256 digests and masked
forms of the identifiers. It is the only write vdbguard makes to a store outside ``protect``.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vdbguard.attacks.base import Attack, l2_normalise
from vdbguard.attacks.membership import null_identities, probe_sentences
from vdbguard.attacks.slot_search import split_person_name
from vdbguard.connectors.base import Connector
from vdbguard.embedders import Embedder
from vdbguard.errors import RecordError, VdbguardError
from vdbguard.masking import mask_if
from vdbguard.pii import PiiType
from vdbguard.records import PROTECTION_MARK_KEY, VectorRecord

if TYPE_CHECKING:
    from vdbguard.config import StoreSettings, SubjectSettings
    from vdbguard.progress import ProgressSink

__all__ = ["Evidence", "Subject", "SubjectRecord", "SubjectSearch", "erase_subject", "find_subject"]

NULL_SIZE = 200
ALPHA = 0.05
# Names from many countries: the threshold is set by the null identities that match the store best, so a
# null of one country's names would call a person from another country (held in no record) present.
NULL_LOCALES: tuple[str, ...] = (
    "en_US", "en_GB", "en_CA", "en_AU", "en_IE", "en_PH", "en_KE", "en_NG", "de_DE", "fr_FR", "es_ES", "es_MX",
    "it_IT", "nl_NL", "pt_BR", "sv_SE", "no_NO", "da_DK", "fi_FI", "pl_PL", "cs_CZ", "tr_TR", "id_ID", "hu_HU",
)  # fmt: skip
CONTROLS = 20  # partial-name controls per name part
_CANDIDATE_Z = 2.0  # rows below this z can never pass the family-wise threshold in practice; not kept
_SPACES = re.compile(r"\s+")
_NULL_PROBES: dict[tuple[Any, ...], np.ndarray] = {}


@dataclass(frozen=True)
class Subject:
    """The person a request is about: any of name, email, phone."""

    name: str | None = None
    email: str | None = None
    phone: str | None = None

    def __post_init__(self) -> None:
        if not self.identifiers:
            raise VdbguardError("a subject needs at least one identifier", "pass --name, --email or --phone")
        if self.phone is not None and len(_digits(self.phone)) < 6:
            raise VdbguardError(f"--phone has {len(_digits(self.phone))} digits", "give the full phone number")

    @property
    def identifiers(self) -> dict[str, str]:
        values = {"name": self.name, "email": self.email, "phone": self.phone}
        return {kind: _SPACES.sub(" ", value).strip() for kind, value in values.items() if value and value.strip()}

    @property
    def name_parts(self) -> tuple[str, ...]:
        if "name" not in self.identifiers:
            return ()
        return tuple(part.lower() for part in split_person_name(self.identifiers["name"]) if part)

    def digests(self) -> dict[str, str]:
        """SHA-256 of each normalised identifier: an auditor holding the request can check it; the log alone
        does not spell the person out (a short name can still be guessed by trying names, as with any hash)."""
        return {
            kind: hashlib.sha256(_normalised(kind, value).encode("utf-8")).hexdigest()
            for kind, value in self.identifiers.items()
        }

    def masked(self, mask_pii: bool = True) -> dict[str, str]:
        return {kind: mask_if(value, mask_pii) for kind, value in self.identifiers.items()}


@dataclass(frozen=True)
class Evidence:
    """Why one record is taken to relate to the subject: the method, what it saw, its score and threshold."""

    method: str  # payload | membership | inversion
    detail: str
    score: float
    threshold: float


@dataclass
class SubjectRecord:
    id: str
    namespace: str | None
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def methods(self) -> list[str]:
        return sorted({e.method for e in self.evidence})


@dataclass
class SubjectSearch:
    """What ``find_subject`` saw: the records with evidence, how many it read, and the thresholds used."""

    collection: str
    subject: dict[str, str]  # masked identifiers
    records_read: int
    records: list[SubjectRecord]
    membership_threshold: float | None = None
    inversion_attacks: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # record id -> why its vector was not tested
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _digits(value: str) -> str:
    return re.sub(r"\D", "", value)


def _normalised(kind: str, value: str) -> str:
    if kind == "phone":
        return _digits(value)
    return _SPACES.sub(" ", value).strip().lower()


def _strings(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(field path, string) for every string in a payload, however nested."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _strings(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _strings(v, f"{key}[{i}]")


class _PayloadMatcher:
    """Finds the subject's identifiers in a record's text and payload strings."""

    def __init__(self, subject: Subject) -> None:
        ids = subject.identifiers
        self.patterns: list[tuple[str, re.Pattern[str]]] = []
        if "name" in ids:
            words = [re.escape(w) for w in ids["name"].split()]
            forms = [r"\s+".join(words)]
            first, last = split_person_name(ids["name"])
            if first and last:
                forms.append(rf"{re.escape(last)}\s*,\s*{re.escape(first)}")
            self.patterns.append(("name", re.compile(rf"(?<!\w)(?:{'|'.join(forms)})(?!\w)", re.IGNORECASE)))
        if "email" in ids:
            self.patterns.append(("email", re.compile(rf"(?<![\w.+-]){re.escape(ids['email'])}(?![\w-])", re.I)))
        self.phone = _digits(ids["phone"]) if "phone" in ids else None

    def evidence(self, record: VectorRecord, mask_pii: bool) -> list[Evidence]:
        fields = list(_strings({k: v for k, v in record.payload.items() if k != PROTECTION_MARK_KEY}))
        if record.text:
            fields.insert(0, ("text", record.text))
        found: dict[str, str] = {}
        for path, value in fields:
            for kind, pattern in self.patterns:
                if kind not in found and (match := pattern.search(value)):
                    found[kind] = f"{kind} in {path}: {mask_if(match.group(), mask_pii)}"
            if self.phone and "phone" not in found and self.phone in _digits(value):
                found["phone"] = f"phone in {path} (matched on its digits)"
        return [Evidence("payload", detail, 1.0, 1.0) for detail in found.values()]


class _MembershipTest:
    """Per-row presence of the subject against random identities, with a family-wise threshold over rows."""

    def __init__(self, subject: Subject, embedder: Embedder, null_size: int, seed: int, locales: Sequence[str]) -> None:
        ids = subject.identifiers
        self.probe = self._mean_probes(embedder, [ids])[0]
        key = (embedder.fingerprint, tuple(ids), null_size, seed, tuple(locales))
        if key not in _NULL_PROBES:  # the same for every subject with these identifier kinds
            people = null_identities(tuple(ids), null_size, seed, locales)
            _NULL_PROBES[key] = self._mean_probes(embedder, people)
        self.nulls = _NULL_PROBES[key]  # (null_size, dimension)
        self.null_max_z = np.full(null_size, -np.inf)
        self.dimension = embedder.dimension
        controls = _partial_names(subject, seed, locales)
        self.controls = self._mean_probes(embedder, controls) if controls else None

    @staticmethod
    def _mean_probes(embedder: Embedder, people: Sequence[Mapping[str, str]]) -> np.ndarray:
        sentences = [probe_sentences(p) for p in people]
        embedded = l2_normalise(embedder.encode([s for group in sentences for s in group]))
        return embedded.reshape(len(people), len(sentences[0]), -1).mean(axis=1)

    def scores(self, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per row: the subject's z against that row's null scores, and how far the subject's score is above the
        best partial-name control (+inf without controls). Updates each null identity's largest z."""
        vectors = l2_normalise(vectors)
        null_scores = vectors @ self.nulls.T  # (rows, null_size)
        mean = null_scores.mean(axis=1, keepdims=True)
        std = np.maximum(null_scores.std(axis=1, ddof=1, keepdims=True), 1e-9)
        self.null_max_z = np.maximum(self.null_max_z, ((null_scores - mean) / std).max(axis=0))
        subject = vectors @ self.probe
        margin = subject - (vectors @ self.controls.T).max(axis=1) if self.controls is not None else np.inf
        return (subject - mean[:, 0]) / std[:, 0], np.broadcast_to(margin, subject.shape)

    def threshold(self, alpha: float) -> float:
        return float(np.quantile(self.null_max_z, 1 - alpha))


def _partial_names(subject: Subject, seed: int, locales: Sequence[str]) -> list[dict[str, str]]:
    """The subject's identifiers with half the name swapped for a random one ("Karen <other>", "<other> Beard"):
    a row that matches these as well as the full name matches a shared name part or a word, not the person."""
    ids = subject.identifiers
    first, last = split_person_name(ids.get("name", ""))
    if not (first and last):
        return []
    others = [split_person_name(p["name"]) for p in null_identities(("name",), 2 * CONTROLS, seed + 1, locales)]
    firsts = [f for f, _ in others if f and f.lower() != first.lower()][:CONTROLS]
    lasts = [la for _, la in others if la and la.lower() != last.lower()][:CONTROLS]
    return [{**ids, "name": f"{first} {other}"} for other in lasts] + [
        {**ids, "name": f"{other} {last}"} for other in firsts
    ]


def _inversion_evidence(
    attack: Attack, subject: Subject, inferences: Iterable[Any], mask_pii: bool
) -> Iterator[Evidence | None]:
    parts = set(subject.name_parts)
    email = subject.identifiers.get("email", "").lower()
    for inference in inferences:
        words: dict[str, float] = {}
        for word, score in inference.recovered_tokens:
            words[word.lower()] = max(words.get(word.lower(), 0.0), float(score))
        for word in re.findall(r"[\w.@+-]+", inference.recovered_text.lower()):
            words.setdefault(word, 1.0)
        for kind, value, score in inference.recovered_pii:
            for word in value.lower().replace(",", " ").split():
                if kind in (PiiType.PERSON, PiiType.EMAIL):
                    words[word] = max(words.get(word, 0.0), float(score))
        hit: Evidence | None = None
        if parts and parts <= set(words):
            score = min(words[p] for p in parts)
            recovered = " ".join(mask_if(p.capitalize(), mask_pii) for p in subject.name_parts)
            hit = Evidence("inversion", f"{attack.name} recovered the name: {recovered}", round(score, 4), 0.0)
        elif email and email in words:
            hit = Evidence("inversion", f"{attack.name} recovered the email: {mask_if(email, mask_pii)}", 1.0, 0.0)
        yield hit


def find_subject(
    connector: Connector,
    subject: Subject,
    embedder: Embedder | None,
    collection: str = "",
    attacks: Sequence[Attack] = (),
    mask_pii: bool = True,
    alpha: float = ALPHA,
    null_size: int = NULL_SIZE,
    null_locales: Sequence[str] = NULL_LOCALES,
    seed: int = 0,
    batch_size: int = 256,
) -> SubjectSearch:
    """Read the whole collection once (never writing) and list the records related to ``subject``.

    ``embedder``: the model that made the stored vectors; without it (or when the vectors are not its
    dimension) only the payload is searched. ``attacks``: fitted inversion attacks for that embedder.
    """
    matcher = _PayloadMatcher(subject)
    found: dict[str, SubjectRecord] = {}
    candidates: list[tuple[str, str | None, float]] = []  # rows whose membership z may pass the threshold
    skipped: dict[str, str] = {}
    notes: list[str] = []
    membership = _MembershipTest(subject, embedder, null_size, seed, null_locales) if embedder is not None else None
    if embedder is None:
        notes.append("no embedder named: vectors not tested (payload search only); pass the --embedder that made them")
    read = 0

    def note(record: VectorRecord, evidence: Evidence) -> None:
        found.setdefault(record.id, SubjectRecord(record.id, record.namespace)).evidence.append(evidence)

    for batch in connector.iter_batches(batch_size=batch_size):
        rows, vectors = [], []
        for record in batch.records:
            read += 1
            for evidence in matcher.evidence(record, mask_pii):
                note(record, evidence)
            if membership is None:
                continue
            try:
                vectors.append(record.checked_vector(membership.dimension, attackable=True))
                rows.append(record)
            except RecordError as exc:
                skipped[record.id] = f"{exc.field} {exc.problem}"
        if not rows or membership is None:
            continue
        matrix = np.stack(vectors)
        for record, z, margin in zip(rows, *membership.scores(matrix), strict=True):
            if z >= _CANDIDATE_Z and margin > 0:
                candidates.append((record.id, record.namespace, float(z)))
        for attack in attacks:
            hits = _inversion_evidence(attack, subject, attack.infer(matrix), mask_pii)
            for record, hit in zip(rows, hits, strict=True):
                if hit is not None:
                    note(record, hit)
    threshold = None
    if membership is not None and read:
        threshold = round(max(membership.threshold(alpha), _CANDIDATE_Z), 3)
        for record_id, namespace, z in candidates:
            if z >= threshold:
                detail = f"matches probes about the subject: z {z:.2f} against {null_size} random identities"
                if membership.controls is not None:
                    detail += ", and beats the name with either half swapped"
                found.setdefault(record_id, SubjectRecord(record_id, namespace)).evidence.append(
                    Evidence("membership", detail, round(z, 3), threshold)
                )
    if skipped:
        notes.append(f"{len(skipped)} records have no usable vector and were searched by payload only")
    return SubjectSearch(
        collection=collection,
        subject=subject.masked(mask_pii),
        records_read=read,
        records=sorted(found.values(), key=lambda r: (r.namespace or "", r.id)),
        membership_threshold=threshold,
        inversion_attacks=[attack.name for attack in attacks],
        skipped=skipped,
        notes=notes,
    )


def _append(log: Path, entry: Mapping[str, Any]) -> None:
    """One line, appended with O_APPEND to an owner-only file: entries are never rewritten."""
    log.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(descriptor, (json.dumps(entry, sort_keys=True) + "\n").encode("utf-8"))
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def erase_subject(
    connector: Connector,
    search: SubjectSearch,
    subject: Subject,
    audit_log: Path,
    location: str,
    actor: str | None = None,
) -> list[str]:
    """Delete the records ``search`` found, logging the request before and the outcome after the delete.

    The first line says what is about to go, so a delete cut off half-way is still on record; the second says
    whether it completed. Returns the deleted ids.
    """
    ids = [record.id for record in search.records]
    entry = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "actor": actor or getpass.getuser(),
        "location": location,
        "collection": search.collection,
        "subject_sha256": subject.digests(),
        "subject_masked": subject.masked(),
        "ids": ids,
        "evidence": {record.id: record.methods for record in search.records},
    }
    _append(audit_log, {**entry, "event": "erasing"})
    try:
        if ids:
            connector.delete(ids)
    except NotImplementedError as exc:
        _append(audit_log, {**entry, "event": "failed", "error": str(exc)})
        raise VdbguardError(str(exc), "delete these ids with the store's own client; the audit log lists them") from exc
    except Exception as exc:
        _append(audit_log, {**entry, "event": "failed", "error": type(exc).__name__})
        raise
    _append(audit_log, {**entry, "event": "erased"})
    return ids


@contextlib.contextmanager
def search_subject(
    store: StoreSettings, collection: str, settings: SubjectSettings, progress: ProgressSink | None = None
) -> Iterator[tuple[Connector, Subject, SubjectSearch]]:
    """`vdbguard subject find`: ``collection`` of ``store`` searched for the person ``settings`` names, with its
    inversion attacks; yields the connector (still open, for `erase`), the subject and what was found."""
    from vdbguard.attacks.training import trained_attacks
    from vdbguard.scan import resolve_embedder

    subject = Subject(name=settings.name, email=settings.email, phone=settings.phone)
    with store.open(collection) as connector:
        model = resolve_embedder(connector, settings.embedder)
        names = [name for name in settings.attack if name != "none"]
        attacks = trained_attacks(model, names, profile=settings.profile, progress=progress) if model and names else []
        yield connector, subject, find_subject(connector, subject, model, collection, attacks, not settings.show_pii)
