"""One decision per record and PII type from every attack's evidence, instead of "any attack over its own
threshold".

A small stacked model per PII type (logistic regression on each attack's score for that type, with a
flag for "this attack said nothing") turns the scores into one probability per type. Each type gets
its own cutoff on the out-of-fold probabilities, chosen to flag the most records with PII while the share
of clean records flagged for any type stays within the stated false-positive rate: the budget is spent per
record, where it buys the most recall. Stored as plain numbers (JSON), never pickled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from vdbguard.attacks.base import one_blas_thread
from vdbguard.pii import AnyPiiType

if TYPE_CHECKING:
    from sklearn.linear_model import LogisticRegression

ScoreKey = tuple[str, str]  # (attack name, PII type value)
MIN_POSITIVES = 5
FOLDS = 5


@dataclass
class TypeModel:
    """Logistic regression over standardised features: per attack, its score (0 when absent) and a
    present flag."""

    attacks: list[str]
    mean: list[float]
    scale: list[float]
    weights: list[float]
    bias: float

    def probability(self, scores: Sequence[Mapping[ScoreKey, float]], pii_type: str) -> np.ndarray:
        from scipy.special import expit  # here: a re-scan with nothing to attack never loads scipy

        features = _features(scores, self.attacks, pii_type)
        z = (features - np.asarray(self.mean)) / np.asarray(self.scale)
        return expit(z @ np.asarray(self.weights) + self.bias)


def _features(scores: Sequence[Mapping[ScoreKey, float]], attacks: Sequence[str], pii_type: str) -> np.ndarray:
    columns = []
    for attack in attacks:
        raw = np.array([row.get((attack, pii_type), -np.inf) for row in scores], dtype=np.float64)
        present = np.isfinite(raw)
        columns += [np.where(present, raw, 0.0), present.astype(np.float64)]
    return np.stack(columns, axis=1) if columns else np.zeros((len(scores), 0))


def _fit_type(features: np.ndarray, truth: np.ndarray, seed: int) -> tuple[LogisticRegression, np.ndarray, np.ndarray]:
    from sklearn.linear_model import LogisticRegression  # fitting only: a re-scan that attacks nothing skips it

    mean = features.mean(axis=0)
    scale = np.where(features.std(axis=0) > 1e-9, features.std(axis=0), 1.0)
    with one_blas_thread():
        model = LogisticRegression(C=1.0, max_iter=2000, random_state=seed).fit((features - mean) / scale, truth)
    return model, mean, scale


@dataclass
class StackedVerdict:
    models: dict[str, TypeModel]
    cutoffs: dict[str, float]
    target_fpr: float

    @classmethod
    def fit(
        cls,
        scores: Sequence[Mapping[ScoreKey, float]],
        labels: Sequence[frozenset[AnyPiiType]],
        target_fpr: float,
        seed: int = 0,
    ) -> StackedVerdict:
        """Fit one model per type with enough positives; choose the cutoffs on out-of-fold probabilities."""
        pairs = {key for row in scores for key in row}
        clean = np.array([not label for label in labels])
        models: dict[str, TypeModel] = {}
        out_of_fold: list[np.ndarray] = []
        for pii_type in sorted({key[1] for key in pairs}):
            truth = np.array([pii_type in label for label in labels])  # a user's CUSTOM:NAME too
            if truth.sum() < MIN_POSITIVES or truth.all():
                continue
            attacks = sorted({attack for attack, t in pairs if t == pii_type})
            features = _features(scores, attacks, pii_type)
            held = np.zeros(len(scores))
            from sklearn.model_selection import StratifiedKFold

            folds = StratifiedKFold(n_splits=min(FOLDS, int(truth.sum())), shuffle=True, random_state=seed)
            for train, test in folds.split(features, truth):
                if truth[train].all() or not truth[train].any():
                    held[test] = truth[train].mean()
                    continue
                model, mean, scale = _fit_type(features[train], truth[train], seed)
                held[test] = model.predict_proba((features[test] - mean) / scale)[:, 1]
            out_of_fold.append(held)
            model, mean, scale = _fit_type(features, truth, seed)
            models[pii_type] = TypeModel(
                attacks, mean.tolist(), scale.tolist(), model.coef_[0].tolist(), float(model.intercept_[0])
            )
        held_out = np.stack(out_of_fold, axis=1) if out_of_fold else np.zeros((len(labels), 0))
        cutoffs = _allocate_cutoffs(held_out, clean, target_fpr)
        return cls(models, dict(zip(models, cutoffs, strict=True)), target_fpr)

    def renamed(self, names: Mapping[str, str]) -> StackedVerdict:
        """The same verdict over attacks renamed (``names``: old -> new), e.g. the packaged attacks run aligned."""
        models = {t: replace(m, attacks=[names.get(a, a) for a in m.attacks]) for t, m in self.models.items()}
        return StackedVerdict(models, dict(self.cutoffs), self.target_fpr)

    def probabilities(self, scores: Sequence[Mapping[ScoreKey, float]]) -> dict[str, np.ndarray]:
        return {pii_type: model.probability(scores, pii_type) for pii_type, model in self.models.items()}

    def to_json(self) -> dict:
        return {
            "cutoffs": self.cutoffs,
            "target_fpr": self.target_fpr,
            "models": {t: m.__dict__ for t, m in self.models.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping) -> StackedVerdict:
        models = {t: TypeModel(**m) for t, m in data["models"].items()}
        return cls(models, {t: float(c) for t, c in data["cutoffs"].items()}, float(data["target_fpr"]))


def _allocate_cutoffs(held: np.ndarray, clean: np.ndarray, target_fpr: float) -> list[float]:
    """Per type (column), cutoffs that flag the most records with PII while at most ``target_fpr`` of the clean
    records are flagged for any type. Greedy: each step lowers the one type's cutoff that buys the most newly
    flagged PII records per newly flagged clean one."""
    allowed = int(target_fpr * clean.sum())
    ranked = [np.unique(held[clean, j])[::-1] for j in range(held.shape[1])]  # distinct clean values, highest first
    cutoffs = np.array([np.nextafter(r[0], np.inf) if len(r) else 1.0 for r in ranked])
    while True:
        flagged = (held >= cutoffs).any(axis=1)
        room = allowed - (flagged & clean).sum()
        best: tuple[float, int, float] | None = None
        free = ~flagged
        for j, values in enumerate(ranked):
            candidates = values[values < cutoffs[j]]
            if not len(candidates):
                continue
            order = np.argsort(-held[free, j], kind="stable")
            reached = np.searchsorted(-held[free, j][order], -candidates, side="right")  # records at or above each
            gain = np.concatenate([[0], np.cumsum(~clean[free][order])])[reached]
            cost = np.concatenate([[0], np.cumsum(clean[free][order])])[reached]
            ratio = np.where((gain > 0) & (cost <= room), gain / np.maximum(cost, 1e-9), 0.0)
            if ratio.max() > 0 and (best is None or ratio.max() > best[0]):
                best = (float(ratio.max()), j, float(candidates[int(ratio.argmax())]))
        if best is None:
            return cutoffs.tolist()
        cutoffs[best[1]] = best[2]
