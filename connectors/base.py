"""The contract every store adapter implements: describe, stream pages resumably, upsert."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from vdbguard.records import Batch, VectorRecord


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    dimension: int | None
    count: int
    metric: str | None
    vector_names: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


class Connector(ABC):
    """Reads (and, for write-path hooks, writes) one collection of one store.

    ``iter_batches`` never writes to the store. Cursors are opaque strings: a cursor taken from a
    batch, passed back as ``resume_from`` (even in a new process), continues right after that batch.
    Stores with namespaces (tenants, partitions) are read namespace by namespace, all of them.
    """

    name: ClassVar[str]
    extra: ClassVar[str]

    @abstractmethod
    def describe(self) -> CollectionInfo: ...

    @abstractmethod
    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]: ...

    @abstractmethod
    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or fully replace records (payload keys absent from the new record are removed)."""

    def delete(self, ids: Sequence[str]) -> None:
        """Delete the records with these ids (absent ids are ignored): only ``subject erase`` calls it."""
        raise NotImplementedError(
            f"the {self.name} connector cannot delete records; delete them with the store's own client"
        )

    def query_vector(self, vector: Sequence[float]) -> list[float] | None:
        """One nearest-neighbour search for ``vector`` that asks the store to return the hit's vector, as any
        search client may: the vector returned, or None when the store leaves it out (``audit`` asks)."""
        raise NotImplementedError(f"the {self.name} connector cannot run a search")

    def ensure_collection(self, dimension: int, metric: str = "cosine", vector_names: Sequence[str] = ()) -> None:
        """Create the collection if it does not exist (for hooks and ``protect``); never alters an existing one."""
        raise NotImplementedError(f"the {self.name} connector cannot create collections")

    def close(self) -> None:  # noqa: B027 - optional hook
        pass

    def __enter__(self) -> Connector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
