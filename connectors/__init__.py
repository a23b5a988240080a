"""Store adapters, found through the ``vdbguard.connectors`` entry point group."""

from __future__ import annotations

from dataclasses import dataclass

from vdbguard.connectors.base import CollectionInfo, Connector

from vdbguard import plugins
from vdbguard.errors import MissingExtraError, VdbguardError

__all__ = ["CollectionInfo", "Connector", "ConnectorEntry", "available_connectors", "load_connector"]


@dataclass(frozen=True)
class ConnectorEntry:
    name: str
    extra: str
    installed: bool
    problem: str | None = None


def _extra_of(name: str) -> str:
    """``qdrant-edge`` ships in the ``qdrant`` extra; every other connector's extra is its name."""
    return name.partition("-")[0]


def load_connector(name: str) -> type[Connector]:
    """The connector class registered under ``name``; a clear install hint when its extra is missing."""
    try:
        return plugins.load("connectors", name)
    except ImportError as exc:
        raise MissingExtraError(f"the {name} connector", _extra_of(name)) from exc


def available_connectors() -> list[ConnectorEntry]:
    entries = []
    for name in plugins.names("connectors"):
        try:
            cls = load_connector(name)
            entries.append(ConnectorEntry(name, cls.extra, True))
        except VdbguardError as exc:
            entries.append(ConnectorEntry(name, _extra_of(name), False, str(exc)))
    return entries
