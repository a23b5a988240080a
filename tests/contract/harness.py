"""What each backend provides to the shared contract suite. One module ``backend_<store>.py`` per store.

A backend knows how to start its engine (embedded dir, real server, or a protocol-level test double
the vendor's own client talks to), how to build the connector for a collection, and how to observe
writes *on the engine* so the suite can prove a scan writes nothing.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from vdbguard.connectors import load_connector
from vdbguard.connectors.base import Connector


class Backend(ABC):
    id: ClassVar[str]  # pytest id, e.g. "chroma-embedded"
    connector_name: ClassVar[str]  # entry point name
    named_vectors: ClassVar[bool] = False
    namespaces: ClassVar[bool] = False
    credentials: ClassVar[bool] = False  # engine checks an API key / token
    transient_errors: ClassVar[bool] = False  # failing() can inject 5xx/UNAVAILABLE
    exact_float32: ClassVar[bool] = True
    metric: ClassVar[str] = "cosine"

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir

    def start(self) -> None:  # noqa: B027 - servers override
        """Start engines/servers; called once per session."""

    def stop(self) -> None:  # noqa: B027
        pass

    @abstractmethod
    def connector_kwargs(self, collection: str) -> dict[str, Any]:
        """JSON-serialisable constructor arguments (also used to rebuild the connector in a new process)."""

    def connector(self, collection: str, **overrides: Any) -> Connector:
        return load_connector(self.connector_name)(**{**self.connector_kwargs(collection), **overrides})

    @abstractmethod
    def write_marker(self) -> Any:
        """Something observed on the engine that changes whenever anything is written to it."""

    def unreachable_kwargs(self, collection: str) -> dict[str, Any] | None:
        """Constructor arguments pointing at a host where nothing listens; None for embedded stores."""
        return None

    def bad_credentials_kwargs(self, collection: str) -> dict[str, Any] | None:
        return None

    @contextmanager
    def failing(self, times: int) -> Iterator[None]:
        """Make the engine answer the next ``times`` requests with a transient error."""
        raise NotImplementedError
        yield


def tree_checksums(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root``: the write marker of an embedded store."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def ids_of(batches: Sequence[Any]) -> list[str]:
    return [record.id for batch in batches for record in batch.records]
