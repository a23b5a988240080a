"""Write-path defenses, found through the ``vdbguard.transforms`` entry point group."""

from __future__ import annotations

from vdbguard import plugins
from vdbguard.transforms.base import Transform

__all__ = ["Transform", "load_transform_class", "transform_classes"]


def transform_classes() -> dict[str, type[Transform]]:
    return plugins.loaded("transforms")


def load_transform_class(name: str) -> type[Transform]:
    return plugins.load("transforms", name)
