"""Pick the weakest transform setting that holds against the strongest attacker, adapted, within a recall budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from vdbguard.errors import VdbguardError
from vdbguard.evaluate.defense import DefenseBench, DefensePoint
from vdbguard.transforms.base import Transform
from vdbguard.transforms.chain import check_name, sweep

CLOSEST = 3


@dataclass
class Calibration:
    """Every point measured, and the chosen one (None when no setting meets both targets)."""

    max_recall_loss: float
    target_leakage_cut: float
    points: list[DefensePoint]
    chosen: DefensePoint | None
    attacks: tuple[str, ...] = ()
    cheap: bool = False

    def within_budget(self, point: DefensePoint) -> bool:
        return point.recall_loss <= self.max_recall_loss

    def holds(self, point: DefensePoint) -> bool:
        """The cut holds against the strongest attacker, the adaptive one included (never measured: no)."""
        cut = point.worst_cut
        return cut is not None and cut >= self.target_leakage_cut

    def meets(self, point: DefensePoint) -> bool:
        return self.within_budget(point) and self.holds(point)

    def closest(self) -> list[DefensePoint]:
        """When nothing meets both targets: the largest cuts within the recall budget, then the cheapest
        settings that reach the cut at a larger recall loss."""
        within = sorted((p for p in self.points if self.within_budget(p)), key=lambda p: -(p.worst_cut or 0.0))
        beyond = sorted((p for p in self.points if self.holds(p) and not self.within_budget(p)), key=_loss)
        return within[:CLOSEST] + beyond[:1]

    def table(self) -> tuple[str, list[str], list[list[str]]]:
        """Every point measured as a table: its title, header and rows."""
        title = f"calibration: leakage cut >= {self.target_leakage_cut:.0%} against {', '.join(self.attacks)} "
        title += f"(adapted), recall loss <= {self.max_recall_loss:.1%}"
        header = ["transform", "strength", "recall@10 loss", "cut vs clean-trained", "cut vs strongest, adapted"]
        rows = [
            [
                p.transform,
                f"{p.strength:g}",
                f"{p.recall_loss:.3f}",
                f"{p.leakage_cut:.1%}",
                cut_text(p.worst_cut),
                meets,
            ]
            for p in self.points
            for meets in ["yes" if self.meets(p) else ""]
        ]
        return title, [*header, "meets both"], rows


def cut_text(cut: float | None) -> str:
    return "-" if cut is None else f"{cut:.1%}"


def _loss(point: DefensePoint) -> float:
    return point.recall_loss


def default_transforms() -> tuple[str, ...]:
    from vdbguard.transforms import transform_classes

    return tuple(name for name, cls in sorted(transform_classes().items()) if cls.default_strengths)


def calibrate(
    bench: DefenseBench,
    *,
    max_recall_loss: float = 0.02,
    target_leakage_cut: float = 0.9,
    transform_names: Sequence[str] = (),
    on_skip: Callable[[str, VdbguardError], None] | None = None,
) -> Calibration:
    """Try each transform's strengths weakest first against ``bench``'s attacks, the adaptive ones included.

    A transform stops at its first setting over the recall budget (stronger ones only lose more) or at its
    first that holds; among transforms, the one losing the least recall wins. A setting whose cut only
    the clean-trained attacker respects is never chosen.
    """
    names = tuple(transform_names) or default_transforms()
    for name in names:
        check_name(name)
    result = Calibration(max_recall_loss, target_leakage_cut, [], None, bench.attack_names, bench.cheap)
    for name in names:
        for transform in _settings(name, on_skip):
            point = bench.measure(transform, adaptive=True, max_recall_loss=max_recall_loss)
            result.points.append(point)
            if not result.within_budget(point):
                break
            if result.holds(point):
                if result.chosen is None or point.recall_loss < result.chosen.recall_loss:
                    result.chosen = point
                break
    return result


def _settings(name: str, on_skip: Callable[[str, VdbguardError], None] | None) -> list[Transform]:
    """The transform at each strength it sweeps, weakest first; [] (said through ``on_skip``) when it cannot
    be built here, e.g. a keyed transform without a key."""
    try:
        return sweep(name)
    except VdbguardError as exc:
        if on_skip is None:
            raise
        on_skip(name, exc)
        return []
