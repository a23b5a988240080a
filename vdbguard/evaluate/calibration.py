"""Pick the weakest transform setting that meets a leakage target within a retrieval budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from vdbguard.embedders import Embedder
from vdbguard.errors import VdbguardError
from vdbguard.evaluate.data import EvalItem
from vdbguard.evaluate.defense import DefensePoint, evaluate_defense
from vdbguard.progress import ProgressSink
from vdbguard.transforms import transform_classes


@dataclass
class Calibration:
    """Every point measured, and the chosen one (None when no setting meets both targets)."""

    max_recall_loss: float
    target_leakage_cut: float
    points: list[DefensePoint]
    chosen: DefensePoint | None

    def meets(self, point: DefensePoint) -> bool:
        return point.recall_loss <= self.max_recall_loss and point.leakage_cut >= self.target_leakage_cut


def calibrate(
    items: Sequence[EvalItem],
    embedder: Embedder,
    *,
    max_recall_loss: float,
    target_leakage_cut: float,
    transform_names: Sequence[str] = (),
    attack_names: Sequence[str] = (),
    profile: str = "default",
    progress: ProgressSink | None = None,
    on_skip: Callable[[str, VdbguardError], None] | None = None,
) -> Calibration:
    """Try each transform's strengths weakest first, against the attacker trained on clean vectors.

    A transform stops at its first setting over the recall budget (stronger ones only lose more) or
    at its first that meets the leakage target; among transforms, the one losing the least recall wins.
    """
    classes = transform_classes()
    unknown = sorted(set(transform_names) - set(classes))
    if unknown:
        raise VdbguardError(f"unknown transform(s) {', '.join(unknown)}", "see `vdbguard transforms list`")
    names = transform_names or tuple(n for n, c in sorted(classes.items()) if c.default_strengths)
    points: list[DefensePoint] = []
    chosen: DefensePoint | None = None
    for name in names:
        for strength in classes[name].default_strengths:
            try:
                transform = classes[name](strength=strength, seed=0)
            except VdbguardError as exc:  # a keyed transform without a key: say so, try the others
                if on_skip:
                    on_skip(name, exc)
                break
            point = evaluate_defense(
                transform, embedder, items, attacks=attack_names, profile=profile, adaptive=False, progress=progress
            )
            points.append(point)
            if point.recall_loss > max_recall_loss:
                break
            if point.leakage_cut >= target_leakage_cut:
                chosen = chosen if chosen and chosen.recall_loss <= point.recall_loss else point
                break
    return Calibration(max_recall_loss, target_leakage_cut, points, chosen)
