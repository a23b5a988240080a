"""Attribute-inference probes: does the text behind this vector contain a name, an email, an SSN...?

One logistic-regression probe per PII type on the embedding, Platt-calibrated on held-out rows so
its score reads as a probability. Linear probes read such attributes from sentence embeddings
almost perfectly, which is exactly the leak (cf. Song & Raghunathan 2020; SPARSE).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from vdbguard.attacks.base import (
    Attack,
    CalibratedProbe,
    Inference,
    Progress,
    l2_normalise,
    labelled_split,
    learned,
)
from vdbguard.corpus import LabelledText
from vdbguard.pii import PROBED_TYPES, PiiType

MIN_POSITIVES = 10


def can_fit(y: np.ndarray, train: np.ndarray, calibration: np.ndarray) -> bool:
    """Enough records with the type to fit a probe on ``train`` and to Platt-scale it on ``calibration``."""
    return bool(y[train].sum() >= MIN_POSITIVES and y[calibration].sum() >= 2 and not y[calibration].all())


def inferences(probabilities: dict[PiiType, np.ndarray], rows: int) -> list[Inference]:
    """Each row's probability per PII type, as a probe attack reports it."""
    columns = {pii_type: p.tolist() for pii_type, p in probabilities.items()}
    return [Inference(type_scores={t: round(p[row], 4) for t, p in columns.items()}) for row in range(rows)]


@dataclass(eq=False)
class PiiProbeAttack(Attack):
    name: ClassVar[str] = "pii-probe"
    description: ClassVar[str] = "calibrated linear probe per PII type: P(source text contains it)"
    version: ClassVar[int] = 2
    kind: ClassVar[str] = "probe"
    threshold: float = 0.5
    regularisation: float = 4.0
    seed: int = 0
    # per type: weights (d,), bias, platt slope, platt intercept
    probes: dict[PiiType, tuple[np.ndarray, float, float, float]] = learned(factory=dict)
    _metrics: dict[str, float] = learned(factory=dict)

    def training_steps(self, items: int) -> int:
        return len(PROBED_TYPES)

    def fit(self, items: Sequence[LabelledText], embeddings: np.ndarray, progress: Progress | None = None) -> None:
        items, x, train, calibration = labelled_split(items, embeddings, self.seed)
        for pii_type in PROBED_TYPES:
            y = np.array([pii_type in item.pii for item in items])
            if can_fit(y, train, calibration):
                probe = CalibratedProbe.fit(x, y, train, calibration, self.regularisation)
                self.probes[pii_type] = (probe.weights, probe.bias, probe.slope, probe.intercept)
                self._metrics[f"auc_{pii_type.value}"] = probe.auc
            if progress:
                progress(1)

    def probabilities(self, vectors: np.ndarray) -> dict[PiiType, np.ndarray]:
        from scipy.special import expit  # here: a re-scan with nothing to attack never loads scipy

        x = l2_normalise(vectors)
        result = {}
        for pii_type, (weights, bias, slope, intercept) in self.probes.items():
            logits = slope * (x @ weights + bias) + intercept
            result[pii_type] = expit(logits)
        return result

    def infer(self, vectors: np.ndarray, known_texts: Sequence[str | None] | None = None) -> list[Inference]:
        return inferences(self.probabilities(vectors), len(vectors))

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        types = list(self.probes)
        np.savez(
            directory / "probes.npz",
            weights=np.stack([self.probes[t][0] for t in types]),
            params=np.array([self.probes[t][1:] for t in types], dtype=np.float64),
        )
        self.write_config(directory, {"types": [t.value for t in types]})

    @classmethod
    def load(cls, directory: Path) -> PiiProbeAttack:
        attack, config = cls.from_config(directory)
        arrays = np.load(directory / "probes.npz")
        for i, value in enumerate(config["types"]):
            bias, slope, intercept = (float(v) for v in arrays["params"][i])
            attack.probes[PiiType(value)] = (arrays["weights"][i], bias, slope, intercept)
        return attack
