"""Attack plugins, found through the ``vdbguard.attacks`` entry point group."""

from __future__ import annotations

from vdbguard import plugins
from vdbguard.attacks.base import Attack, Inference
from vdbguard.config import AttackSettings, job_default
from vdbguard.errors import VdbguardError

__all__ = ["DEFAULT_ATTACKS", "Attack", "Inference", "attack_classes", "load_attack_class", "strongest_inversion"]

DEFAULT_ATTACKS: tuple[str, ...] = tuple(job_default(AttackSettings, "fast"))


def attack_classes() -> dict[str, type[Attack]]:
    """Every installed attack plugin; one that fails to import is skipped with a warning, not fatal."""
    return plugins.loaded("attacks")


def strongest_inversion(embedder: str | None = None) -> str:
    """The installed inversion attack with the best measured token F1 on ``embedder`` (see
    :mod:`vdbguard.attacks.quality`); with nothing measured for it, the one with the highest ``rank``."""
    from vdbguard.attacks.quality import best_measured

    inversions = {name: cls for name, cls in attack_classes().items() if cls.kind == "inversion"}
    if not inversions:
        raise VdbguardError("no inversion attack is installed")
    measured = best_measured(embedder, set(inversions)) if embedder else None
    return measured or max(inversions, key=lambda name: inversions[name].rank)


def load_attack_class(name: str, embedder: str | None = None) -> type[Attack]:
    """The attack class registered as ``name``; "strongest" is resolved for ``embedder``."""
    return plugins.load("attacks", strongest_inversion(embedder) if name == "strongest" else name)
