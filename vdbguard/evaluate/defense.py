"""What a write-path transform costs retrieval and what it buys against attacks, adaptive ones included.

Utility: neighbour recall@10 (each record's 10 nearest neighbours before vs after, no labels needed)
and known-item retrieval recall@10 / NDCG@10 (each text is queried by a random half of its words).
Leakage: share of name parts (first and last names) an attack recovers, or of content words when
the data has no names, against (a) an attacker trained on clean vectors and (b) an adaptive one
retrained on vectors protected the same way. Several attacks can be run; the headline numbers are
the strongest one's (the maximum), and each attack's own numbers are kept.

Default attacks: ``slot-search`` and ``bag-of-words`` when the data names people, ``bag-of-words``
otherwise: the cheap ones, so a sweep of every setting with adaptive retraining fits in an hour.
Slot search recovers the most names (BENCHMARKS.md, "Defenses frontier"); vec2text and generative
recover fewer and cost seconds per record. ``gradient`` (white-box, ~1-3 s per record) recovers fewer
names than slot search on clean vectors but is not gated by a linear probe, so concept erasure (LEACE)
that blinds slot search leaves it untouched: add ``gradient`` before trusting a concept-erasure result.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from vdbguard.attacks import Attack
from vdbguard.attacks.bag_of_words import content_words
from vdbguard.attacks.training import PROFILES, trained_attacks
from vdbguard.corpus.embedded import embed_corpus
from vdbguard.embedders import Embedder
from vdbguard.evaluate.data import EvalItem
from vdbguard.progress import ProgressSink
from vdbguard.text import name_recovery, tokens
from vdbguard.transforms.base import Transform
from vdbguard.transforms.concepts import DEFAULT_CONCEPT, concept_labels

K = 10
NAME_ATTACKS: tuple[str, ...] = ("slot-search", "bag-of-words")
WORD_ATTACKS: tuple[str, ...] = ("bag-of-words",)
log = logging.getLogger("vdbguard.evaluate.defense")


def default_attacks(items: Sequence[EvalItem]) -> tuple[str, ...]:
    """The cheap attacks that recover the most: names when the data names people, else words."""
    return NAME_ATTACKS if any(item.names for item in items) else WORD_ATTACKS


def _top_k(queries: np.ndarray, docs: np.ndarray, k: int, exclude_self: bool) -> np.ndarray:
    scores = queries @ docs.T
    if exclude_self:
        np.fill_diagonal(scores, -np.inf)
    return np.argpartition(-scores, kth=min(k, scores.shape[1] - 1), axis=1)[:, :k]


def neighbour_recall(clean: np.ndarray, protected_docs: np.ndarray, protected_queries: np.ndarray, k: int = K) -> float:
    """Mean overlap of each record's k nearest neighbours before and after protection."""
    before = _top_k(clean, clean, k, exclude_self=True)
    after = _top_k(protected_queries, protected_docs, k, exclude_self=True)
    return float(np.mean([len(set(b) & set(a)) / k for b, a in zip(before, after, strict=True)]))


def known_item_retrieval(queries: np.ndarray, docs: np.ndarray, k: int = K) -> tuple[float, float]:
    """Recall@k and NDCG@k when query i's one relevant document is document i."""
    scores = queries @ docs.T
    ranks = (scores > scores[np.arange(len(docs)), np.arange(len(docs))][:, None]).sum(axis=1)
    hit = ranks < k
    return float(hit.mean()), float(np.where(hit, 1.0 / np.log2(ranks + 2), 0.0).mean())


def half_query(text: str, rng: random.Random) -> str:
    words = text.split()
    keep = sorted(rng.sample(range(len(words)), max(1, len(words) // 2)))
    return " ".join(words[i] for i in keep)


def leakage(attack: Attack, vectors: np.ndarray, items: Sequence[EvalItem]) -> float:
    """Share of name parts recovered; share of content words when no item names anyone."""
    predictions = [inference.recovered_text for inference in attack.infer(vectors)]
    if any(item.names for item in items):
        parts: list[bool] = []
        for prediction, item in zip(predictions, items, strict=True):
            first, last, _ = name_recovery(prediction, item.names)
            parts += first + last
        return float(np.mean(parts))
    hits = total = 0
    for prediction, item in zip(predictions, items, strict=True):
        truth = set(content_words(item.text))
        hits += len(truth & set(tokens(prediction)))
        total += len(truth)
    return hits / max(total, 1)


def fit_on_corpus(
    transform: Transform, embedder: Embedder, profile: str = "default", progress: ProgressSink | None = None
) -> Transform:
    """Fit on the attack-training corpus with "names a person" labels, never on the data being evaluated.

    Fitting on the evaluated records would let a codebook or an erasure tailor itself to them and
    flatter both utility and leakage; this is the sample a user without labels of their own would use.
    """
    settings = PROFILES[profile]
    corpus = settings.corpus()
    vectors = embed_corpus(embedder, corpus, progress)
    return transform.fit(vectors, concept_labels(corpus, DEFAULT_CONCEPT))


@dataclass(frozen=True)
class AttackLeakage:
    clean: float
    protected: float | None  # None: the clean-trained attacker cannot read this space (PCA)
    adaptive: float | None = None  # None: not measured, or the attack cannot be retrained on this space


def _strongest(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


@dataclass(frozen=True)
class DefensePoint:
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

    @property
    def unmeasured(self) -> list[str]:
        """Attacks with no number on protected vectors: they could neither read nor be retrained on them."""
        return [name for name, a in self.attacks.items() if a.protected is None and a.adaptive is None]

    @property
    def leakage_cut(self) -> float:
        """Cut against the non-adaptive attacker; where it cannot run, against the adaptive one.

        0 when an attack could not be measured at all: an attack that cannot run earns the transform no credit.
        """
        protected = self.leakage_protected if self.leakage_protected is not None else self.leakage_protected_adaptive
        if protected is None or not self.leakage_clean or self.unmeasured:
            return 0.0
        return 1 - protected / self.leakage_clean

    @property
    def adaptive_leakage_cut(self) -> float | None:
        if self.leakage_protected_adaptive is None or not self.leakage_clean:
            return None
        return 1 - self.leakage_protected_adaptive / self.leakage_clean

    @property
    def recall_loss(self) -> float:
        return self.recall_at_10_clean - self.recall_at_10


def _attack_sample(items: Sequence[EvalItem], limit: int | None, seed: int) -> list[int]:
    """Indices to attack: at most ``limit``, drawn from the records that name someone when any do."""
    pool = [i for i, item in enumerate(items) if item.names] or list(range(len(items)))
    if limit is None or limit >= len(pool):
        return pool
    return sorted(random.Random(seed).sample(pool, limit))


def evaluate_defense(
    transform: Transform,
    embedder: Embedder,
    items: Sequence[EvalItem],
    *,
    attacks: Sequence[str] = (),
    profile: str = "default",
    adaptive: bool = True,
    progress: ProgressSink | None = None,
    seed: int = 0,
    attack_limit: int | None = None,
) -> DefensePoint:
    """Measure one transform setting. ``attacks`` defaults to :func:`default_attacks`; utility is measured
    on every item, leakage on at most ``attack_limit`` of them (slot search re-embeds 25 guesses per record).
    """
    started = time.perf_counter()
    clean = embedder.encode([item.text for item in items])
    rng = random.Random(seed)
    queries = embedder.encode([half_query(item.text, rng) for item in items])
    if transform.needs_fit:
        fit_on_corpus(transform, embedder, profile, progress)
    protected = transform.apply(clean)
    recall_clean, ndcg_clean = known_item_retrieval(queries, clean)
    recall, ndcg = known_item_retrieval(transform.apply_query(queries), protected)
    same_space = protected.shape[1] == clean.shape[1]

    chosen = _attack_sample(items, attack_limit, seed)
    targets = [items[i] for i in chosen]
    names = attacks or default_attacks(items)
    results: dict[str, AttackLeakage] = {}
    for attack in trained_attacks(embedder, names, profile=profile, progress=progress):
        results[attack.name] = AttackLeakage(
            clean=round(leakage(attack, clean[chosen], targets), 4),
            protected=round(leakage(attack, protected[chosen], targets), 4) if same_space else None,
        )
    if adaptive:
        for name in list(results):
            try:
                (retrained,) = trained_attacks(embedder, [name], profile=profile, progress=progress, defense=transform)
            except (RuntimeError, ValueError) as exc:  # e.g. an attack that needs the embedder's own dimension
                log.warning("%s cannot be retrained on %s output: %s", name, transform.name, exc)
                continue
            results[name] = replace(results[name], adaptive=round(leakage(retrained, protected[chosen], targets), 4))
    return DefensePoint(
        transform=transform.name,
        strength=transform.strength,
        neighbour_recall_at_10=round(neighbour_recall(clean, protected, transform.apply_query(clean)), 4),
        recall_at_10=round(recall, 4),
        ndcg_at_10=round(ndcg, 4),
        recall_at_10_clean=round(recall_clean, 4),
        ndcg_at_10_clean=round(ndcg_clean, 4),
        leakage_clean=max(r.clean for r in results.values()),
        leakage_protected=_strongest([r.protected for r in results.values()]),
        leakage_protected_adaptive=_strongest([r.adaptive for r in results.values()]),
        seconds=round(time.perf_counter() - started, 2),
        attacks=results,
        attacked_records=len(chosen),
    )
