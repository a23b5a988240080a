"""What a write-path transform costs retrieval and what it buys against attacks, adaptive ones included.

Utility: neighbour recall@10 (each record's 10 nearest neighbours before vs after, no labels needed)
and known-item retrieval recall@10 / NDCG@10 (each text is queried by a random half of its words).
Leakage: share of name parts (first and last names) the attack recovers, or of content words when
the data has no names, against (a) an attacker trained on clean vectors and (b) an adaptive one
retrained on vectors protected the same way.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vdbguard.attacks import Attack
from vdbguard.attacks.bag_of_words import content_words
from vdbguard.embedders import Embedder
from vdbguard.evaluation import EvalItem, name_recovery, tokens
from vdbguard.progress import ProgressSink
from vdbguard.training import trained_attacks
from vdbguard.transforms.base import Transform

K = 10


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
    leakage_protected: float | None  # None: the clean-trained attacker cannot read this space (PCA)
    leakage_protected_adaptive: float | None
    seconds: float

    @property
    def leakage_cut(self) -> float:
        """Cut against the non-adaptive attacker; where it cannot run, against the adaptive one."""
        protected = self.leakage_protected if self.leakage_protected is not None else self.leakage_protected_adaptive
        if protected is None or not self.leakage_clean:
            return 0.0
        return 1 - protected / self.leakage_clean

    @property
    def recall_loss(self) -> float:
        return self.recall_at_10_clean - self.recall_at_10


def evaluate_defense(
    transform: Transform,
    embedder: Embedder,
    items: Sequence[EvalItem],
    *,
    attack_name: str = "strongest",
    profile: str = "default",
    adaptive: bool = True,
    progress: ProgressSink | None = None,
    seed: int = 0,
) -> DefensePoint:
    started = time.perf_counter()
    clean = embedder.encode([item.text for item in items])
    rng = random.Random(seed)
    queries = embedder.encode([half_query(item.text, rng) for item in items])
    if transform.needs_fit:
        transform.fit(clean)
    protected = transform.apply(clean)
    protected_self_queries = transform.apply_query(clean)
    recall_clean, ndcg_clean = known_item_retrieval(queries, clean)
    recall, ndcg = known_item_retrieval(transform.apply_query(queries), protected)
    (attack,) = trained_attacks(embedder, [attack_name], profile=profile, progress=progress)
    same_space = protected.shape[1] == clean.shape[1]
    adaptive_leakage = None
    if adaptive:
        (adaptive_attack,) = trained_attacks(
            embedder, [attack_name], profile=profile, progress=progress, defense=transform
        )
        adaptive_leakage = round(leakage(adaptive_attack, protected, items), 4)
    return DefensePoint(
        transform=transform.name,
        strength=transform.strength,
        neighbour_recall_at_10=round(neighbour_recall(clean, protected, protected_self_queries), 4),
        recall_at_10=round(recall, 4),
        ndcg_at_10=round(ndcg, 4),
        recall_at_10_clean=round(recall_clean, 4),
        ndcg_at_10_clean=round(ndcg_clean, 4),
        leakage_clean=round(leakage(attack, clean, items), 4),
        leakage_protected=round(leakage(attack, protected, items), 4) if same_space else None,
        leakage_protected_adaptive=adaptive_leakage,
        seconds=round(time.perf_counter() - started, 2),
    )
