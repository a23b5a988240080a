"""One loader for every plugin kind: connectors, attacks, transforms, detectors and report writers.

Each kind is an entry-point group (``vdbguard.<kind>``), so a third party adds one by declaring an
entry point in its own package, without forking. A plugin that fails to import is reported, not
fatal: one broken extra must not take the rest of the tool down with it.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from vdbguard.errors import VdbguardError

log = logging.getLogger("vdbguard.plugins")

KINDS = ("connectors", "attacks", "transforms", "detectors", "reports")


@dataclass(frozen=True)
class PluginEntry:
    """One registered plugin: loaded, or the reason it could not be."""

    kind: str
    name: str
    plugin: Any | None
    problem: Exception | None = None


@cache
def _registered(kind: str) -> dict[str, EntryPoint]:
    if kind not in KINDS:
        raise ValueError(f"unknown plugin kind {kind!r}; one of {KINDS}")
    return {ep.name: ep for ep in entry_points(group=f"vdbguard.{kind}")}


def names(kind: str) -> list[str]:
    return sorted(_registered(kind))


def entries(kind: str) -> list[PluginEntry]:
    """Every registered plugin of ``kind``, each loaded or carrying the error that stopped it."""
    found = []
    for name, ep in sorted(_registered(kind).items()):
        try:
            found.append(PluginEntry(kind, name, ep.load()))
        except (ImportError, AttributeError) as exc:
            found.append(PluginEntry(kind, name, None, exc))
    return found


def loaded(kind: str) -> dict[str, Any]:
    """The plugins of ``kind`` that import; the others are logged and left out."""
    result = {}
    for entry in entries(kind):
        if entry.problem is None:
            result[entry.name] = entry.plugin
        else:
            log.warning("%s plugin %r could not be loaded: %s", kind, entry.name, entry.problem)
    return result


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``"did you mean chroma? "`` for a near miss among ``choices``, else nothing: a typo named with its fix."""
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f"did you mean {close[0]}? " if close else ""


def load(kind: str, name: str) -> Any:
    """The plugin registered as ``name``; an unknown name suggests the closest one and lists the choices.
    Import errors propagate, so the caller can turn a missing extra into an install hint."""
    registered = _registered(kind)
    if name not in registered:
        choices = ", ".join(sorted(registered)) or "none installed"
        raise VdbguardError(f"unknown {kind[:-1]} {name!r}", f"{did_you_mean(name, registered)}choose from: {choices}")
    return registered[name].load()
