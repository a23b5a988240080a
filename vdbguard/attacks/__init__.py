"""Attack plugins, found through the ``vdbguard.attacks`` entry point group."""

from __future__ import annotations

from vdbguard import plugins
from vdbguard.attacks.base import Attack, Inference
from vdbguard.errors import VdbguardError

__all__ = ["DEFAULT_ATTACKS", "Attack", "Inference", "attack_classes", "load_attack_class", "strongest_inversion"]

DEFAULT_ATTACKS = ("pii-probe", "bag-of-words")


def attack_classes() -> dict[str, type[Attack]]:
    """Every installed attack plugin; one that fails to import is skipped with a warning, not fatal."""
    return plugins.loaded("attacks")


def strongest_inversion() -> str:
    """The registered inversion attack with the highest ``rank``."""
    inversions = {name: cls for name, cls in attack_classes().items() if cls.kind == "inversion"}
    if not inversions:
        raise VdbguardError("no inversion attack is installed")
    return max(inversions, key=lambda name: inversions[name].rank)


def load_attack_class(name: str) -> type[Attack]:
    return plugins.load("attacks", strongest_inversion() if name == "strongest" else name)
