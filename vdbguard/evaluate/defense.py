"""What a write-path defense costs retrieval and what it buys against the strongest attacks, adapted.

Utility: known-item recall@10 / NDCG@10, each text queried by a random half of its words, split into
queries that carry no PII (the recall budget: most searches) and queries that carry a name or another
listed PII value (redaction and erasure are meant to lose some of those), plus neighbour recall@10
(each record's 10 nearest neighbours before vs after; no labels needed).

Leakage: the share of name parts an attack recovers (of content words when the data names nobody),
and of all listed PII value tokens. Every attack runs three ways: trained on clean vectors and run on
clean ones (the baseline) and on protected ones; and adaptive, as an attacker who knows the pipeline
(transform, strength, fit, key) would: attacks that learn retrain on corpus vectors protected the
same way, and every attack also runs on protected vectors mapped back by a ridge map fitted on
(protected, clean) corpus pairs, the alignment step of ALGEN (the only adaptation a zero-shot attack
such as white-box gradient inversion has). The headline leakage is the largest over attacks and ways.

Default suite, :func:`default_attacks`: white-box ``gradient``, the best measured inversion attack for
the embedder (within ``seconds_per_record``), ``slot-search`` when the data names people, and
``bag-of-words``. ``cheap=True`` keeps only the last two, minutes instead of hours: a lower bound on
leakage, and every result says so.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from vdbguard.attacks import Attack, strongest_inversion
from vdbguard.attacks.alignment import AlignedAttack, ridge_map
from vdbguard.attacks.bag_of_words import content_words
from vdbguard.attacks.base import with_record_budget
from vdbguard.attacks.training import PROFILES, _profile_corpus, protected_embeddings, trained_attacks
from vdbguard.corpus.embedded import embed_corpus
from vdbguard.embedders import Embedder
from vdbguard.evaluate.data import EvalItem, load_jsonl
from vdbguard.progress import ProgressSink, Silent
from vdbguard.text import name_parts, name_recovery, tokens
from vdbguard.transforms.base import Transform
from vdbguard.transforms.concepts import DEFAULT_CONCEPT, concept_labels

if TYPE_CHECKING:
    from vdbguard.config import DefenseBenchSettings

K = 10
CHEAP_NAME_ATTACKS: tuple[str, ...] = ("slot-search", "bag-of-words")
CHEAP_WORD_ATTACKS: tuple[str, ...] = ("bag-of-words",)
SECONDS_PER_RECORD = 5.0
# tokens of PII values that any guess contains by chance (domains, URL parts): not counted as leaked
_COMMON_PII_TOKENS = frozenset({"com", "org", "net", "www", "http", "https", "example", "gmail", "yahoo", "hotmail"})
log = logging.getLogger("vdbguard.evaluate.defense")


def default_attacks(
    items: Sequence[EvalItem], embedder: Embedder | None = None, cheap: bool = False
) -> tuple[str, ...]:
    """The strongest suite for this data (see the module docstring); ``cheap``: slot search and bag-of-words."""
    names = any(item.names for item in items)
    if cheap:
        return CHEAP_NAME_ATTACKS if names else CHEAP_WORD_ATTACKS
    suite = ["gradient", strongest_inversion(embedder.name if embedder else None)]
    suite += ["slot-search", "bag-of-words"] if names else ["bag-of-words"]
    return tuple(dict.fromkeys(suite))


def _top_k(queries: np.ndarray, docs: np.ndarray, k: int, exclude_self: bool) -> np.ndarray:
    scores = queries @ docs.T
    if exclude_self:
        np.fill_diagonal(scores, -np.inf)
    return np.argpartition(-scores, kth=min(k, scores.shape[1] - 1), axis=1)[:, :k]


def neighbour_recall(
    clean: np.ndarray,
    protected_docs: np.ndarray,
    protected_queries: np.ndarray,
    k: int = K,
    rows: np.ndarray | None = None,
) -> float:
    """Mean overlap of each record's k nearest neighbours before and after protection (over ``rows``: a mask)."""
    before = _top_k(clean, clean, k, exclude_self=True)
    after = _top_k(protected_queries, protected_docs, k, exclude_self=True)
    if rows is not None:
        before, after = before[rows], after[rows]
    return float(np.mean([len(set(b) & set(a)) / k for b, a in zip(before, after, strict=True)]))


def known_item_retrieval(
    queries: np.ndarray, docs: np.ndarray, k: int = K, rows: np.ndarray | None = None
) -> tuple[float, float]:
    """Recall@k and NDCG@k when query i's one relevant document is document i (over ``rows``: a mask)."""
    if rows is not None and not rows.any():
        return float("nan"), float("nan")
    scores = queries @ docs.T
    ranks = (scores > scores[np.arange(len(docs)), np.arange(len(docs))][:, None]).sum(axis=1)
    if rows is not None:
        ranks = ranks[rows]
    hit = ranks < k
    return float(hit.mean()), float(np.where(hit, 1.0 / np.log2(ranks + 2), 0.0).mean())


def half_query(text: str, rng: random.Random) -> str:
    words = text.split()
    keep = sorted(rng.sample(range(len(words)), max(1, len(words) // 2)))
    return " ".join(words[i] for i in keep)


def pii_tokens(item: EvalItem) -> set[str]:
    """The tokens of every listed PII value (names without titles) that a guess could not contain by chance."""
    listed = [*(part for name in item.names for part in name_parts(name)), *(t for v in item.pii for t in tokens(v))]
    return {token for token in listed if len(token) > 2 and token not in _COMMON_PII_TOKENS}


def carries_pii(query: str, item: EvalItem) -> bool:
    return bool(pii_tokens(item) & set(tokens(query)))


@dataclass(frozen=True)
class Leakage:
    """Share recovered: name parts (content words when no item names anyone), and listed PII value tokens."""

    primary: float
    pii: float | None = None  # None: the data lists no PII


def score_leakage(predictions: Sequence[str], items: Sequence[EvalItem]) -> Leakage:
    parts: list[bool] = []
    hits = total = pii_hits = pii_total = 0
    for prediction, item in zip(predictions, items, strict=True):
        predicted = set(tokens(prediction))
        first, last, _ = name_recovery(prediction, item.names)
        parts += first + last
        truth = set(content_words(item.text))
        hits += len(truth & predicted)
        total += len(truth)
        secret = pii_tokens(item)
        pii_hits += len(secret & predicted)
        pii_total += len(secret)
    primary = float(np.mean(parts)) if any(item.names for item in items) else hits / max(total, 1)
    return Leakage(round(primary, 4), round(pii_hits / pii_total, 4) if pii_total else None)


def leakage(attack: Attack, vectors: np.ndarray, items: Sequence[EvalItem]) -> Leakage:
    return score_leakage([inference.recovered_text for inference in attack.infer(vectors)], items)


def fit_on_corpus(
    transform: Transform, embedder: Embedder, profile: str = "default", progress: ProgressSink | None = None
) -> Transform:
    """Fit on the attack-training corpus with "names a person" labels, never on the data being evaluated.

    Fitting on the evaluated records would let a codebook or an erasure tailor itself to them and
    flatter both utility and leakage; this is the sample a user without labels of their own would use.
    """
    corpus = _profile_corpus(PROFILES[profile])
    vectors = embed_corpus(embedder, corpus, progress)
    return transform.fit(vectors, concept_labels(corpus, DEFAULT_CONCEPT))


@dataclass(frozen=True)
class AttackLeakage:
    clean: float
    protected: float | None  # None: the clean-trained attacker cannot read this space (PCA)
    adaptive: float | None = None  # None: not measured
    pii_clean: float | None = None
    pii_protected: float | None = None
    pii_adaptive: float | None = None


def _strongest(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _cut(clean: float | None, left: float | None) -> float | None:
    return None if left is None or not clean else 1 - left / clean


@dataclass(frozen=True)
class DefensePoint:
    """One transform setting measured. Recall fields are on queries that carry no PII; ``pii_query_*`` on
    those that do (None when there are none)."""

    transform: str
    strength: float
    neighbour_recall_at_10: float
    recall_at_10: float
    ndcg_at_10: float
    recall_at_10_clean: float
    ndcg_at_10_clean: float
    leakage_clean: float
    leakage_protected: float | None
    leakage_protected_adaptive: float | None
    seconds: float
    attacks: dict[str, AttackLeakage] = field(default_factory=dict)
    attacked_records: int = 0
    adaptive_measured: bool = False
    cheap: bool = False
    pii_query_recall_at_10: float | None = None
    pii_query_recall_at_10_clean: float | None = None
    pii_queries: int = 0

    @property
    def unmeasured(self) -> list[str]:
        """Attacks with no number on protected vectors: they could neither read nor be retrained on them."""
        return [name for name, a in self.attacks.items() if a.protected is None and a.adaptive is None]

    @property
    def leakage_cut(self) -> float:
        """Cut against the clean-trained attacker; where it cannot run, against the adaptive one.

        0 when an attack could not be measured at all: an attack that cannot run earns the transform no credit.
        """
        protected = self.leakage_protected if self.leakage_protected is not None else self.leakage_protected_adaptive
        if protected is None or not self.leakage_clean or self.unmeasured:
            return 0.0
        return 1 - protected / self.leakage_clean

    @property
    def adaptive_leakage_cut(self) -> float | None:
        return _cut(self.leakage_clean, self.leakage_protected_adaptive)

    @property
    def worst_leakage(self) -> float | None:
        """What the strongest attacker recovers, clean-trained or adaptive: the number a defense is judged by."""
        return _strongest([self.leakage_protected, self.leakage_protected_adaptive])

    @property
    def worst_cut(self) -> float | None:
        """The cut against the strongest attacker; None until the adaptive attacker has run."""
        if not self.adaptive_measured or self.unmeasured:
            return None
        return _cut(self.leakage_clean, self.worst_leakage)

    @property
    def pii_worst_cut(self) -> float | None:
        """The same for every listed PII value token (names, emails, numbers)."""
        if not self.adaptive_measured:
            return None
        clean = _strongest([a.pii_clean for a in self.attacks.values()])
        left = _strongest([v for a in self.attacks.values() for v in (a.pii_protected, a.pii_adaptive)])
        return _cut(clean, left)

    @property
    def recall_loss(self) -> float:
        return self.recall_at_10_clean - self.recall_at_10

    @property
    def pii_query_recall_loss(self) -> float | None:
        if self.pii_query_recall_at_10 is None or self.pii_query_recall_at_10_clean is None:
            return None
        return self.pii_query_recall_at_10_clean - self.pii_query_recall_at_10


def _attack_sample(items: Sequence[EvalItem], limit: int | None, seed: int) -> list[int]:
    """Indices to attack: at most ``limit``, drawn from the records that name someone when any do."""
    pool = [i for i, item in enumerate(items) if item.names] or list(range(len(items)))
    if limit is None or limit >= len(pool):
        return pool
    return sorted(random.Random(seed).sample(pool, limit))


def _nan_to_none(value: float) -> float | None:
    return None if np.isnan(value) else round(value, 4)


class DefenseBench:
    """One data set embedded once, its attacks trained and its clean leakage measured once: then any number
    of transform settings measured against it (the frontier, calibrate)."""

    def __init__(
        self,
        embedder: Embedder,
        items: Sequence[EvalItem],
        *,
        attacks: Sequence[str] = (),
        cheap: bool = False,
        profile: str = "default",
        attack_limit: int | None = None,
        seconds_per_record: float = SECONDS_PER_RECORD,
        seed: int = 0,
        progress: ProgressSink | None = None,
    ) -> None:
        self.embedder, self.items, self.profile, self.seed = embedder, list(items), profile, seed
        self.progress = progress or Silent()
        self.cheap = cheap and not attacks
        self.attack_names = tuple(attacks) or default_attacks(items, embedder, cheap)
        self.seconds_per_record = seconds_per_record
        self.texts = [item.text for item in self.items]
        self.clean = embedder.encode(self.texts)
        rng = random.Random(seed)
        self.query_texts = [half_query(text, rng) for text in self.texts]
        self.queries = embedder.encode(self.query_texts)
        self.pii_query = np.array([carries_pii(q, item) for q, item in zip(self.query_texts, self.items, strict=True)])
        self.chosen = _attack_sample(self.items, attack_limit, seed)
        self.targets = [self.items[i] for i in self.chosen]
        self._attacks: list[Attack] | None = None
        self._clean_leakage: dict[str, Leakage] = {}

    @classmethod
    def of(cls, settings: DefenseBenchSettings, progress: ProgressSink | None = None) -> DefenseBench:
        """The bench `evaluate-defense`, `calibrate` and `frontier` measure on."""
        return cls(
            Embedder(settings.embedder),
            load_jsonl(settings.data),
            attacks=settings.attack,
            cheap=settings.cheap,
            profile=settings.profile,
            attack_limit=settings.attack_limit,
            seconds_per_record=settings.seconds_per_record,
            progress=progress,
        )

    def attacks(self) -> list[Attack]:
        if self._attacks is None:
            self._attacks = [
                with_record_budget(attack, self.seconds_per_record)
                for attack in trained_attacks(
                    self.embedder, self.attack_names, profile=self.profile, progress=self.progress
                )
            ]
        return self._attacks

    def _run(self, attack: Attack, vectors: np.ndarray, how: str) -> Leakage:
        with self.progress.task(f"{attack.name} on {how} vectors", None):
            return leakage(attack, vectors, self.targets)

    def clean_leakage(self, attack: Attack) -> Leakage:
        if attack.name not in self._clean_leakage:
            self._clean_leakage[attack.name] = self._run(attack, self.clean[self.chosen], "clean")
        return self._clean_leakage[attack.name]

    def protect(self, transform: Transform) -> tuple[np.ndarray, np.ndarray]:
        """Documents and queries as the store would hold and receive them under ``transform``."""
        if transform.needs_fit and not transform.fitted:  # a fit the owner saved is measured as it is
            fit_on_corpus(transform, self.embedder, self.profile, self.progress)
        text_side = transform.text_side
        docs = transform.write_path(self.texts, self.embedder.encode) if text_side else transform.apply(self.clean)
        queries = self.queries
        if transform.text_side and getattr(transform, "redact_queries", False):
            queries = self.embedder.encode(transform.transform_texts(self.query_texts))
        return np.asarray(docs, dtype=np.float32), transform.apply_query(queries)

    def _adaptive(self, attack: Attack, transform: Transform, protected: np.ndarray, mapping: np.ndarray) -> Leakage:
        """The better of the attack retrained on protected vectors (attacks that learn) and the clean attack
        on protected vectors mapped back to the clean space."""
        results = [self._run(AlignedAttack(attack, mapping), protected, "aligned protected")]
        if not attack.zero_shot:
            try:
                (retrained,) = trained_attacks(
                    self.embedder, [attack.name], profile=self.profile, progress=self.progress, defense=transform
                )
                results.append(
                    self._run(
                        with_record_budget(retrained, self.seconds_per_record), protected, "protected (retrained)"
                    )
                )
            except (RuntimeError, ValueError) as exc:  # e.g. an attack that needs the embedder's own dimension
                log.warning("%s cannot be retrained on %s output: %s", attack.name, transform.name, exc)
        return max(results, key=lambda leak: leak.primary)

    def _alignment(self, transform: Transform) -> np.ndarray:
        corpus = _profile_corpus(PROFILES[self.profile])
        clean = embed_corpus(self.embedder, corpus, self.progress)
        return ridge_map(protected_embeddings(transform, self.embedder, corpus, self.progress), clean)

    def utility(self, transform: Transform) -> tuple[np.ndarray, dict[str, float | int | None]]:
        """The protected documents and what the transform costs retrieval (the DefensePoint utility fields)."""
        protected, protected_queries = self.protect(transform)
        plain = ~self.pii_query
        recall_clean, ndcg_clean = known_item_retrieval(self.queries, self.clean, rows=plain)
        recall, ndcg = known_item_retrieval(protected_queries, protected, rows=plain)
        pii_clean, _ = known_item_retrieval(self.queries, self.clean, rows=self.pii_query)
        pii_recall, _ = known_item_retrieval(protected_queries, protected, rows=self.pii_query)
        return protected, {
            "neighbour_recall_at_10": round(
                neighbour_recall(self.clean, protected, transform.apply_query(self.clean)), 4
            ),
            "recall_at_10": round(recall, 4),
            "ndcg_at_10": round(ndcg, 4),
            "recall_at_10_clean": round(recall_clean, 4),
            "ndcg_at_10_clean": round(ndcg_clean, 4),
            "pii_query_recall_at_10": _nan_to_none(pii_recall),
            "pii_query_recall_at_10_clean": _nan_to_none(pii_clean),
            "pii_queries": int(self.pii_query.sum()),
        }

    def measure(
        self, transform: Transform, adaptive: bool = True, max_recall_loss: float | None = None
    ) -> DefensePoint:
        """One setting; over ``max_recall_loss`` only its utility is measured (no attack runs, no leakage)."""
        started = time.perf_counter()
        protected, utility = self.utility(transform)
        if max_recall_loss is not None and utility["recall_at_10_clean"] - utility["recall_at_10"] > max_recall_loss:  # type: ignore[operator]
            return DefensePoint(
                transform=transform.name,
                strength=transform.strength,
                leakage_clean=0.0,
                leakage_protected=None,
                leakage_protected_adaptive=None,
                seconds=round(time.perf_counter() - started, 2),
                **utility,  # type: ignore[arg-type]
            )
        same_space = protected.shape[1] == self.clean.shape[1]
        mapping = self._alignment(transform) if adaptive else None
        results: dict[str, AttackLeakage] = {}
        for attack in self.attacks():
            clean = self.clean_leakage(attack)
            direct = self._run(attack, protected[self.chosen], "protected") if same_space else None
            adapted = (
                self._adaptive(attack, transform, protected[self.chosen], mapping) if mapping is not None else None
            )
            results[attack.name] = AttackLeakage(
                clean=clean.primary,
                protected=direct.primary if direct else None,
                adaptive=adapted.primary if adapted else None,
                pii_clean=clean.pii,
                pii_protected=direct.pii if direct else None,
                pii_adaptive=adapted.pii if adapted else None,
            )
        return DefensePoint(
            transform=transform.name,
            strength=transform.strength,
            leakage_clean=max(r.clean for r in results.values()),
            leakage_protected=_strongest([r.protected for r in results.values()]),
            leakage_protected_adaptive=_strongest([r.adaptive for r in results.values()]),
            seconds=round(time.perf_counter() - started, 2),
            attacks=results,
            attacked_records=len(self.chosen),
            adaptive_measured=adaptive,
            cheap=self.cheap,
            **utility,  # type: ignore[arg-type]
        )


def evaluate_defense(
    transform: Transform, embedder: Embedder, items: Sequence[EvalItem], *, adaptive: bool = True, **bench: Any
) -> DefensePoint:
    """Measure one transform setting (see the module docstring); ``bench``: ``DefenseBench``'s settings (the
    attacks, ``attack_limit`` records at most, the budget, the seed, progress)."""
    return DefenseBench(embedder, items, **bench).measure(transform, adaptive=adaptive)
