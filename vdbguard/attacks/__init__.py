"""Attack plugins, found through the ``vdbguard.attacks`` entry point group."""

from __future__ import annotations

import logging
from importlib.metadata import entry_points

from vdbguard.attacks.base import Attack, Inference
from vdbguard.errors import VdbguardError

__all__ = ["DEFAULT_ATTACKS", "Attack", "Inference", "attack_classes", "load_attack_class", "strongest_inversion"]

DEFAULT_ATTACKS = ("pii-probe", "bag-of-words")
log = logging.getLogger("vdbguard.attacks")


def attack_classes() -> dict[str, type[Attack]]:
    """Every installed attack plugin; one that fails to import is skipped with a warning, not fatal."""
    classes = {}
    for ep in entry_points(group="vdbguard.attacks"):
        try:
            classes[ep.name] = ep.load()
        except (ImportError, AttributeError) as exc:
            log.warning("attack plugin %r could not be loaded: %s", ep.name, exc)
    return classes


def strongest_inversion() -> str:
    """The registered inversion attack with the highest ``strength``."""
    inversions = {name: cls for name, cls in attack_classes().items() if cls.kind == "inversion"}
    if not inversions:
        raise VdbguardError("no inversion attack is installed")
    return max(inversions, key=lambda name: inversions[name].strength)


def load_attack_class(name: str) -> type[Attack]:
    if name == "strongest":
        name = strongest_inversion()
    classes = attack_classes()
    if name not in classes:
        raise VdbguardError(f"unknown attack {name!r}", f"choose from: {', '.join(sorted(classes))}")
    return classes[name]
