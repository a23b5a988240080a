"""`vdbguard audit`: the exposure surface of one collection, beside what the attacks recover.

Access control is the strongest defense the inversion literature names (seed 001): a vector nobody can read
cannot be inverted. The audit reads the collection (never writes) and reports, each with a severity and a fix:

- **transport**: a server reached over plain http sends vectors and credentials in clear;
- **access**: a server that lists and returns vectors to a client with no credentials at all, and an
  embedded store whose files other users of the machine can read;
- **raw vectors**: stored vectors that the named embedder makes from their own stored text are its raw
  output, so every inversion attack applies as measured;
- **vector statistics**: without any text, whether the stored vectors look like the named embedder's raw
  output: the direction of their mean and the profile of their spread per dimension, against its output on
  reference text (a keyed rotation or strong noise destroys both; quantization keeps them);
- **transform strength**: where the stored vectors are not the named embedder's output for their text
  (transformed, or another model's), a linear map fitted on half of the store's own (text, vector) pairs is
  tested on the other half (ALGEN): if it carries them back close to the embedder's vectors, whoever reads
  the store can undo the transform without its key and run every inversion attack;
- **transform strength with the owner's key**: given the transform, strength and key or fit the store was
  protected with, the audit first checks that they reproduce the stored vectors from their text, then
  measures on the store's own text what the transform buys against the attacks adapted to it (retrained on
  vectors protected the same way, and ALGEN alignment): the same measurement as ``evaluate-defense``;
- **payload–vector consistency**, a check no other tool makes: each stored text is embedded again and compared
  with its stored vector. Where the text holds redaction placeholders (``<PERSON>``, ``[REDACTED]``) but the
  vector is not the embedding of that text, the vector was made from the text before redaction: it leaks
  what the payload hides.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np

from vdbguard.attacks.alignment import ridge_map
from vdbguard.attacks.base import l2_normalise
from vdbguard.connectors.base import Connector
from vdbguard.embedders import SAME_TEXT, Embedder
from vdbguard.errors import RecordError, VdbguardError
from vdbguard.progress import ProgressSink
from vdbguard.records import VectorRecord
from vdbguard.reports.schema import Severity
from vdbguard.transforms.base import Transform

if TYPE_CHECKING:
    from vdbguard.config import AuditSettings, StoreSettings

MOSTLY = 0.5  # more records than this not matching their text: the embedder named is not the store's
_PLACEHOLDER = re.compile(r"<[A-Z][A-Z_]{2,}>|\[(?:REDACTED|[A-Z][A-Z_]{2,})\]|\*{4,}|█{2,}")
_LOOPBACK = ("localhost", "127.0.0.1", "::1")
UNDONE, PARTLY_UNDONE = 0.8, 0.5  # held-out median cosine after alignment: high, medium (chance is ~0.05)
MIN_PAIRS = 20
LOOKS_RAW = 0.9, 0.8  # mean-direction cosine, spread-profile correlation at or above which vectors look raw
MIN_VECTORS = 50
MIN_NAMED = 10  # texts naming someone needed to judge a transform by the names it lets through
HOLDS, PARTLY_HOLDS = 0.9, 0.5  # leakage cut against the adaptive attacker: below the first medium, the second high
REPRODUCED = 0.05  # the owner's transform may fall this far short of agreeing with itself (two noise draws)
# what a "raw vectors" finding asks of the owner, however the raw vectors were recognised
_PROTECT_RAW = (
    "protect the vectors before insert (vdbguard protect / guard; docs/defenses.md: redaction before embedding) "
    "and give readers of raw vectors the fewest credentials"
)


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


# what each server connector is given, on top of the user's settings, to connect with no credentials at all
ANONYMOUS: dict[str, dict[str, Any]] = {
    "qdrant": {"api_key": ""},
    "chroma": {"headers": None},
    "weaviate": {"api_key": "", "headers": None},
    "milvus": {"token": ""},
    "pinecone": {"api_key": "vdbguard-audit-no-key"},  # the SDK insists on some key
}
_REFUSED = re.compile(r"\b40[13]\b|credential|api key|unauthori[sz]ed|forbidden|rejected|permission", re.IGNORECASE)


def access_findings(
    connector_name: str, location: str, open_anonymous: Callable[[], Connector] | None
) -> tuple[list[AuditFinding], list[str]]:
    """Whether the store serves vectors to a client without credentials (``open_anonymous`` connects as one),
    or, for an embedded store at ``location``, to other users of the machine."""
    if open_anonymous is None:
        return _file_access_findings(Path(location)), []
    if connector_name not in ANONYMOUS:
        return [], [f"unauthenticated access is not checked for {connector_name}"]
    try:
        with open_anonymous() as anonymous:
            anonymous.describe()
            next(iter(anonymous.iter_batches(batch_size=1)), None)
    except VdbguardError as exc:
        if _REFUSED.search(exc.message):
            return [], []
        return [], [f"unauthenticated access could not be checked: {exc.message}"]
    return [
        AuditFinding(
            "access",
            Severity.HIGH,
            f"the store at {location} lists and returns vectors to a client with no credentials: anyone who can "
            "reach it can read and invert every vector",
            "turn on the store's authentication (API keys, tokens) and give scanners a read-only key",
        )
    ], []


def query_findings(connector: Connector, vector: np.ndarray) -> tuple[list[AuditFinding], list[str]]:
    """Whether a search returns the stored vectors of its hits (Qdrant ``with_vectors``, Chroma ``include``):
    then any key that may search can also collect vectors, a query at a time, and invert them."""
    try:
        returned = connector.query_vector(vector.tolist())
    except NotImplementedError as exc:
        return [], [f"whether searches return stored vectors is not checked: {exc}"]
    except VdbguardError as exc:
        return [], [f"whether searches return stored vectors could not be checked: {exc.message}"]
    if returned is None:
        return [], []
    return [
        AuditFinding(
            "query endpoint",
            Severity.LOW,
            "a search returns the stored vectors of its hits when asked: every key or application that may search "
            "can collect vectors (one query at a time, with random query vectors) and invert them, not only keys "
            "that may read the collection",
            "let applications search through a service of your own that strips vectors from results, and keep "
            "the store's own API keys for the few jobs that need raw vectors",
        )
    ], []


def _file_access_findings(path: Path) -> list[AuditFinding]:
    readable = [p for p in (path, *(path.rglob("*") if path.is_dir() else ())) if p.stat().st_mode & 0o004]
    if not readable:
        return []
    return [
        AuditFinding(
            "access",
            Severity.MEDIUM,
            f"{len(readable)} of the store's files and folders are readable by every user of this machine",
            f"chmod -R o-rwx {path} (and run the application that owns it with a umask of 027 or stricter)",
            evidence={"examples": [str(p) for p in readable[:5]]},
        )
    ]


@dataclass
class StoredTexts:
    """Records that keep their text (at most ``sample``), read once for every check that compares a stored
    vector with its text: ``stored`` unit rows, ``embedded`` the embedder's vectors of ``texts`` (computed once)."""

    ids: list[str]
    texts: list[str]
    stored: np.ndarray
    embedder: Embedder

    @classmethod
    def read(cls, connector: Connector, embedder: Embedder, sample: int) -> StoredTexts:
        rows = list(_records_with_text(connector, sample))
        stored = l2_normalise(np.stack([vector for _, vector, _ in rows])) if rows else np.zeros((0, 0), np.float32)
        return cls([r.id for r, _, _ in rows], [text for _, _, text in rows], stored, embedder)

    @cached_property
    def embedded(self) -> np.ndarray:
        return self.embedder.encode(self.texts)


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


def _sample_vectors(connector: Connector, limit: int) -> np.ndarray | None:
    vectors = []
    for batch in connector.iter_batches(batch_size=256):
        for record in batch.records:
            try:
                vectors.append(record.checked_vector())
            except RecordError:
                continue
            if len(vectors) >= limit:
                return np.stack(vectors)
    return np.stack(vectors) if vectors else None


def statistics_findings(connector: Connector, embedder: Embedder, sample: int) -> tuple[list[AuditFinding], list[str]]:
    """Whether the stored vectors look like ``embedder``'s raw output by their statistics alone (no text needed)."""
    from vdbguard.corpus.embedded import embed_list
    from vdbguard.corpus.human import human_sentences

    vectors = _sample_vectors(connector, sample)
    if vectors is None or len(vectors) < MIN_VECTORS:
        return [], [f"fewer than {MIN_VECTORS} readable vectors: their statistics were not compared"]
    norms = np.linalg.norm(vectors, axis=1)
    stats: dict[str, Any] = {
        "vectors": len(vectors),
        "norm_mean": round(float(norms.mean()), 4),
        "norm_std": round(float(norms.std()), 4),
        "distinct_values_per_dimension": int(np.median([len(np.unique(column)) for column in vectors.T[:32]])),
    }
    if vectors.shape[1] != embedder.dimension:
        return [], [
            f"stored vectors have {vectors.shape[1]} dimensions, {embedder.name} makes {embedder.dimension}: {stats}"
        ]
    reference = embed_list(embedder, human_sentences("train")[:300])
    unit = l2_normalise(vectors)
    mean, expected = unit.mean(axis=0), reference.mean(axis=0)
    stats["mean_direction_cosine"] = round(
        float(mean @ expected / (np.linalg.norm(mean) * np.linalg.norm(expected))), 4
    )
    stats["spread_profile_correlation"] = round(float(np.corrcoef(unit.std(axis=0), reference.std(axis=0))[0, 1]), 4)
    stats["thresholds"] = dict(zip(("mean_direction_cosine", "spread_profile_correlation"), LOOKS_RAW, strict=True))
    looks_raw = stats["mean_direction_cosine"] >= LOOKS_RAW[0] and stats["spread_profile_correlation"] >= LOOKS_RAW[1]
    said = (
        f"mean direction cosine {stats['mean_direction_cosine']} and spread profile correlation "
        f"{stats['spread_profile_correlation']} against {embedder.name}'s output on reference text, over "
        f"{len(vectors)} stored vectors"
    )
    if not looks_raw:
        return [], [
            f"by their statistics the stored vectors are not {embedder.name}'s raw output ({said}): "
            "transformed, or another model's"
        ]
    return [
        AuditFinding(
            "raw vectors",
            Severity.MEDIUM,
            f"by their statistics the stored vectors look like {embedder.name}'s raw output ({said}): every "
            "inversion attack applies as measured",
            _PROTECT_RAW,
            evidence=stats,
        )
    ], []


def consistency_findings(sampled: StoredTexts) -> tuple[list[AuditFinding], list[str], int]:
    """Each stored text embedded again and compared with its stored vector: the findings, notes on what could
    not be checked, and how many texts were."""
    if not sampled.ids:
        return [], ["no record keeps its text: payload-vector consistency not checked"], 0
    ids, texts, stored, embedder = sampled.ids, sampled.texts, sampled.stored, sampled.embedder
    embedded = sampled.embedded
    if stored.shape[1] != embedder.dimension:
        note = f"stored vectors have {stored.shape[1]} dimensions and {embedder.name} makes {embedder.dimension}"
        aligned, aligned_notes = alignment_findings(stored, embedded, embedder.name)
        return (
            aligned,
            [f"{note}: pass the --embedder that made them to check them against their text", *aligned_notes],
            len(ids),
        )
    similarity = np.sum(embedded * stored, axis=1)
    mismatched = similarity < SAME_TEXT
    median = round(float(np.median(similarity)), 4)
    if mismatched.mean() > MOSTLY:
        note = (
            f"{int(mismatched.sum())} of {len(ids)} stored vectors are not {embedder.name}'s embedding of their "
            f"stored text (median cosine {median}): another model made them, or they were transformed; pass the "
            "--embedder that made them (or --embedder auto) to check them against their text"
        )
        aligned, aligned_notes = alignment_findings(stored, embedded, embedder.name)
        return aligned, [note, *aligned_notes], len(ids)
    findings = [
        AuditFinding(
            "raw vectors",
            Severity.MEDIUM,
            f"{int((~mismatched).sum())} of {len(ids)} stored vectors are {embedder.name}'s raw output for their "
            f"stored text (median cosine {median}): every inversion attack applies as measured",
            _PROTECT_RAW,
            evidence={"median_cosine": median},
        )
    ]
    leaking = [i for i in np.flatnonzero(mismatched) if has_placeholder(texts[i])]
    other = [i for i in np.flatnonzero(mismatched) if i not in set(leaking)]
    for rows, severity, message, hint in (
        (
            leaking,
            Severity.HIGH,
            f"{len(leaking)} records have redacted text but a vector that is not the embedding of it: the vector "
            "was made from the text before redaction and leaks what the payload hides",
            "re-embed these records from their redacted text (redact before embedding: vdbguard.hooks)",
        ),
        (
            other,
            Severity.LOW,
            f"{len(other)} records have a vector that is not the embedding of their stored text (text edited "
            "after embedding, or embedded from other text)",
            "check how these records were written; re-embed them if their text changed",
        ),
    ):
        if rows:
            cosines = {ids[i]: round(float(similarity[i]), 4) for i in rows}
            findings.append(
                AuditFinding(
                    "payload-vector consistency",
                    severity,
                    message,
                    hint,
                    record_ids=[ids[i] for i in rows],
                    evidence={"cosine": cosines},
                )
            )
    return findings, [], len(ids)


def alignment_findings(stored: np.ndarray, embedded: np.ndarray, embedder: str) -> tuple[list[AuditFinding], list[str]]:
    """How far a linear map fitted on half of the store's (text, vector) pairs undoes whatever made the stored
    vectors differ from ``embedder``'s, measured on the other half (median cosine)."""
    n = len(stored)
    if n < MIN_PAIRS:
        return [], [f"only {n} records keep their text: too few to test whether alignment undoes the vectors"]
    train, test = np.arange(0, n, 2), np.arange(1, n, 2)
    mapped = l2_normalise(stored[test] @ ridge_map(stored[train], embedded[train]))
    median = round(float(np.median(np.sum(mapped * embedded[test], axis=1))), 4)
    evidence = {"held_out_median_cosine": median, "pairs_fitted": len(train), "pairs_tested": len(test)}
    evidence |= {"thresholds": {"high": UNDONE, "medium": PARTLY_UNDONE}}
    said = (
        f"a linear map fitted on {len(train)} of the store's own (text, vector) pairs carries the other {len(test)} "
        f"stored vectors to {embedder}'s vectors of their text with median cosine {median}"
    )
    fix = (
        "do not keep the text beside protected vectors (or store it encrypted), and choose a transform alignment "
        "does not undo, measured with `vdbguard evaluate-defense` (a keyed rotation alone is undone)"
    )
    if median >= UNDONE:
        message = f"the stored vectors' transform (or model) is undone without its key: {said} (ALGEN)"
        return [AuditFinding("transform strength", Severity.HIGH, message, fix, evidence=evidence)], []
    if median >= PARTLY_UNDONE:
        message = f"the stored vectors' transform (or model) is partly undone: {said}"
        return [AuditFinding("transform strength", Severity.MEDIUM, message, fix, evidence=evidence)], []
    return [], [
        f"alignment does not undo the stored vectors: {said}; more pairs help an attacker, and other "
        "attacks may do better"
    ]


@dataclass
class OwnerTransform:
    """The transform the owner says the store was protected with (key from the environment, fit loaded), and
    how hard to attack it: the ``evaluate-defense`` options."""

    transform: Transform
    attacks: tuple[str, ...] = ()
    cheap: bool = False
    profile: str = "default"
    attack_limit: int | None = 50
    progress: ProgressSink | None = None


def owner_transform_findings(sampled: StoredTexts, owner: OwnerTransform) -> tuple[list[AuditFinding], list[str]]:
    """Whether the owner's transform reproduces the stored vectors, and what it buys against the adaptive attacker
    on the store's own text."""
    from vdbguard.detectors import load_detector
    from vdbguard.evaluate.data import EvalItem
    from vdbguard.evaluate.defense import evaluate_defense
    from vdbguard.pii import PiiType

    transform = owner.transform
    if len(sampled.ids) < MIN_PAIRS:
        return [], [f"only {len(sampled.ids)} records keep their text: too few to measure {transform.name} on"]
    texts, stored, embedder, embedded = sampled.texts, sampled.stored, sampled.embedder, sampled.embedded

    def protect() -> np.ndarray:
        made = transform.write_path(texts, embedder.encode) if transform.text_side else transform.apply(embedded)
        return l2_normalise(np.asarray(made, dtype=np.float32))

    mine, again = protect(), protect()  # two draws of any noise: how close a right key can come
    if mine.shape != stored.shape:
        return [], [
            f"{transform.name} makes {mine.shape[1]}-dimensional vectors and the store holds {stored.shape[1]}: "
            "pass the transform, strength and fit the store was protected with"
        ]
    itself = float(np.median(np.sum(mine * again, axis=1)))
    reproduced = float(np.median(np.sum(mine * stored, axis=1)))
    if reproduced < itself - REPRODUCED:
        return [], [
            f"{transform.name} (strength {transform.strength}) with the given key or fit does not reproduce the "
            f"stored vectors from their text (median cosine {reproduced:.3f}; it agrees with itself at "
            f"{itself:.3f}): a wrong key, fit, strength or --embedder; what it buys was not measured"
        ]
    detector = load_detector()
    found = [detector.detect(text) for text in texts]
    names = [tuple(d.value for d in hits if d.pii_type == PiiType.PERSON) for hits in found]
    if sum(map(bool, names)) < MIN_NAMED:  # too few to judge by names: judge by every content word instead
        names = [()] * len(texts)
    pii = [tuple(d.value for d in hits) for hits in found]
    items = [EvalItem(text, names=n, pii=p) for text, n, p in zip(texts, names, pii, strict=True)]
    point = evaluate_defense(
        transform,
        embedder,
        items,
        attacks=owner.attacks,
        cheap=owner.cheap,
        profile=owner.profile,
        attack_limit=owner.attack_limit,
        progress=owner.progress,
    )
    what = "name parts" if any(item.names for item in items) else "content words"
    worst = point.worst_leakage
    cut = point.worst_cut if point.worst_cut is not None else 0.0
    evidence = {
        "transform": transform.name,
        "strength": transform.strength,
        "reproduced_median_cosine": round(reproduced, 4),
        "leakage_clean": point.leakage_clean,
        "leakage_protected": point.leakage_protected,
        "leakage_protected_adaptive": point.leakage_protected_adaptive,
        "worst_cut": round(cut, 4),
        "attacks": {name: asdict(leak) for name, leak in point.attacks.items()},
        "attacked_records": point.attacked_records,
        "cheap": point.cheap,
        "thresholds": {"medium": HOLDS, "high": PARTLY_HOLDS},
    }
    said = (
        f"with the owner's key, the strongest attack adapted to {transform.name} (strength {transform.strength}) "
        f"recovers {(worst or 0):.0%} of the {what} of {point.attacked_records} of this store's texts, against "
        f"{point.leakage_clean:.0%} from raw vectors: "
        + (f"a {cut:.0%} cut" if cut > 0 else "no cut at all")
        + (" (cheap attackers only: a lower bound on leakage)" if point.cheap else "")
    )
    fix = (
        "choose a setting that holds against the adaptive attacker (vdbguard calibrate), e.g. redact before "
        "embedding, and keep the key and fit away from whoever reads the store"
    )
    if point.unmeasured:
        return [], [f"{said}; not measured: {', '.join(point.unmeasured)}"]
    if not point.leakage_clean:
        return [], [
            f"the attacks recover nothing from the raw vectors of this store's texts, so what "
            f"{transform.name} buys cannot be measured here: {said}"
        ]
    if cut < PARTLY_HOLDS:
        return [AuditFinding("transform strength (owner's key)", Severity.HIGH, said, fix, evidence=evidence)], []
    if cut < HOLDS:
        return [AuditFinding("transform strength (owner's key)", Severity.MEDIUM, said, fix, evidence=evidence)], []
    return [], [f"the owner's transform holds: {said}"]


def audit_collection(
    connector: Connector,
    *,
    connector_name: str,
    location: str,
    embedder: Embedder,
    sample: int = 2000,
    open_anonymous: Callable[[], Connector] | None = None,
    owner: OwnerTransform | None = None,
) -> AuditReport:
    """The exposure surface of the connector's collection; reads only. ``open_anonymous`` opens the same
    server collection with no credentials (None for an embedded store, whose files are checked instead);
    ``owner``: the transform the store was protected with, to measure what it buys."""
    info = connector.describe()
    access, access_notes = access_findings(connector_name, location, open_anonymous)
    sampled = StoredTexts.read(connector, embedder, sample)
    consistency, notes, checked = consistency_findings(sampled)
    if not any(f.check == "raw vectors" for f in consistency):  # the text did not already tell
        statistics, statistics_notes = statistics_findings(connector, embedder, sample)
        consistency, notes = [*consistency, *statistics], [*notes, *statistics_notes]
    if owner is not None:
        owned, owner_notes = owner_transform_findings(sampled, owner)
        consistency, notes = [*consistency, *owned], [*notes, *owner_notes]
    query, query_notes = [], []
    if open_anonymous is not None:  # a server: whoever reads an embedded store's files has every vector anyway
        stored = _sample_vectors(connector, 1)
        query, query_notes = query_findings(connector, stored[0]) if stored is not None else ([], [])
    notes = [*access_notes, *query_notes, *notes]
    return AuditReport(
        connector=connector_name,
        collection=info.name,
        location=location,
        embedder=embedder.name,
        records=info.count or 0,
        texts_checked=checked,
        findings=[*transport_findings(location), *access, *query, *consistency],
        notes=notes,
    )


def run_audit(store: StoreSettings, collection: str, settings: AuditSettings) -> AuditReport:
    """`vdbguard audit`: ``collection`` of ``store`` audited, a server also tried without credentials, and with
    ``settings.transform`` (the owner's) what that transform buys."""
    from vdbguard.credentials import redact_location, strip_userinfo
    from vdbguard.scan import resolve_embedder
    from vdbguard.transforms.chain import build_transform
    from vdbguard.transforms.fitting import load_fit

    owner = None
    if settings.transform is not None:
        transform = build_transform(settings.transform, settings.strength)
        if settings.fit_file is not None:
            load_fit(transform, settings.fit_file)
        elif transform.needs_fit:
            raise VdbguardError(
                f"{settings.transform} needs the fit the store was protected with",
                "pass --fit-file (the .npz `vdbguard protect` saved); a fit made on other data would not reproduce "
                "the stored vectors",
            )
        owner = OwnerTransform(
            transform, tuple(settings.attack), settings.cheap, settings.profile, settings.attack_limit
        )
    anonymous = None
    if store.url is not None:
        options = {**store.options, **ANONYMOUS.get(store.connector, {})}
        anonymous = store.model_copy(update={"url": strip_userinfo(store.url), "options": options, "credentials": {}})
    with store.open(collection) as connector:
        return audit_collection(
            connector,
            connector_name=store.connector,
            location=redact_location(str(store.path or store.url)),
            embedder=resolve_embedder(connector, settings.embedder) or Embedder(),
            sample=settings.sample_size,
            open_anonymous=None if anonymous is None else lambda: anonymous.open(collection),
            owner=owner,
        )
