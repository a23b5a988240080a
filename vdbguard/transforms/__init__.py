"""Write-path defenses, found through the ``vdbguard.transforms`` entry point group."""

from __future__ import annotations

import logging
from importlib.metadata import entry_points

from vdbguard.errors import VdbguardError
from vdbguard.transforms.base import Transform

__all__ = ["Transform", "load_transform_class", "transform_classes"]
log = logging.getLogger("vdbguard.transforms")


def transform_classes() -> dict[str, type[Transform]]:
    classes = {}
    for ep in entry_points(group="vdbguard.transforms"):
        try:
            classes[ep.name] = ep.load()
        except (ImportError, AttributeError) as exc:
            log.warning("transform plugin %r could not be loaded: %s", ep.name, exc)
    return classes


def load_transform_class(name: str) -> type[Transform]:
    classes = transform_classes()
    if name not in classes:
        raise VdbguardError(f"unknown transform {name!r}", f"choose from: {', '.join(sorted(classes)) or 'none'}")
    return classes[name]
