"""One decision per record and PII type from every attack's evidence, instead of "any attack over its own
threshold".

A small stacked model per PII type (logistic regression on each attack's score for that type, with a
flag for "this attack said nothing") turns the scores into one probability per type. Each type gets
its own cutoff, all at one tail rate of the clean records' out-of-fold probabilities, the largest rate
at which the share of clean records flagged for any type stays within the stated false-positive rate:
the budget is spent per record, and rare types are not drowned by common ones. Stored as plain
numbers (JSON), never pickled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

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
        """Fit one model per type with enough positives; choose the cutoff on out-of-fold probabilities."""
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
        clean_probabilities = np.stack(out_of_fold, axis=1)[clean] if out_of_fold else np.zeros((0, 0))
        cutoffs = _cutoffs_for_record_fpr(clean_probabilities, target_fpr)
        return cls(models, dict(zip(models, cutoffs, strict=True)), target_fpr)

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


def _cutoff_at_rate(clean: np.ndarray, rate: float) -> float:
    """The lowest cutoff that at most ``rate`` of these clean probabilities reach."""
    ranked = np.sort(clean)[::-1]
    allowed = int(rate * len(ranked))
    return 1.0 if allowed >= len(ranked) else float(np.nextafter(ranked[allowed], np.inf))


def _cutoffs_for_record_fpr(clean: np.ndarray, target_fpr: float) -> list[float]:
    """Per type (column), cutoffs at the largest common tail rate whose union stays within ``target_fpr``."""
    n, types = clean.shape
    best = [_cutoff_at_rate(clean[:, j], 0.0) for j in range(types)]
    for allowed in range(1, n):
        cutoffs = [_cutoff_at_rate(clean[:, j], allowed / n) for j in range(types)]
        if (clean >= np.array(cutoffs)).any(axis=1).mean() > target_fpr:
            break
        best = cutoffs
    return best
