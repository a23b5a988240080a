"""Store adapters, found through the ``vdbguard.connectors`` entry point group."""

from __future__ import annotations

from dataclasses import dataclass

from vdbguard.connectors.base import CollectionInfo, Connector, default_extra

from vdbguard import plugins
from vdbguard.errors import MissingExtraError, VdbguardError

__all__ = ["CollectionInfo", "Connector", "ConnectorEntry", "available_connectors", "load_connector"]


@dataclass(frozen=True)
class ConnectorEntry:
    name: str
    extra: str
    installed: bool
    problem: str | None = None


def load_connector(name: str) -> type[Connector]:
    """The connector class registered under ``name``; a clear install hint when its extra is missing."""
    try:
        return plugins.load("connectors", name)
    except ImportError as exc:
        raise MissingExtraError(f"the {name} connector", default_extra(name)) from exc


def available_connectors() -> list[ConnectorEntry]:
    entries = []
    for name in plugins.names("connectors"):
        try:
            cls = load_connector(name)
            entries.append(ConnectorEntry(name, cls.extra, True))
        except VdbguardError as exc:
            entries.append(ConnectorEntry(name, default_extra(name), False, str(exc)))
    return entries
