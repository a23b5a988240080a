"""The contract every store adapter implements: list the store's collections, describe one, stream its pages
resumably, upsert."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from vdbguard.errors import VdbguardError
from vdbguard.records import Batch, VectorRecord

STORE_WIDE = "*"
"""The ``collection`` a connector is built with to list its store (:meth:`Connector.list_collections`): a name no
store's collection has, so that a message from the store names the store, not a collection."""


def default_extra(name: str) -> str:
    """The extra a connector ships in unless it names another: ``qdrant-edge`` ships in ``qdrant``; every other
    connector's extra is its name."""
    return name.partition("-")[0]


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
    extra: ClassVar[str]  # the pip extra with the store's client, ``vdbguard[<extra>]``; unless set, default_extra()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in vars(cls) and not hasattr(cls, "extra"):
            cls.extra = default_extra(cls.name)

    @classmethod
    def list_collections(cls, **settings: Any) -> list[str]:
        """Every collection of the store that ``settings`` (the connector's own, without ``collection``) reach,
        sorted and each once: what ``scan --collection '*'`` expands. Each name, passed back as ``collection``,
        opens that collection. It only reads, as a scan does (embedded stores through the same private copy).
        A connector that cannot enumerate its store raises a VdbguardError saying so, before it connects."""
        if cls._collection_names is Connector._collection_names:
            raise _cannot_list(cls.name)
        with cls(collection=STORE_WIDE, **settings) as connector:
            return sorted(set(connector._collection_names()))

    def _collection_names(self) -> Iterable[str]:
        """The store's collections, in any order, for :meth:`list_collections`; overridden by every connector
        that can enumerate its store (the connector was built on :data:`STORE_WIDE`)."""
        raise _cannot_list(self.name)

    @abstractmethod
    def describe(self) -> CollectionInfo: ...

    @abstractmethod
    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]: ...

    def content_version(self) -> str | None:
        """The store's own name for the collection's content as this connector reads it now, where the store keeps
        one: equal names promise equal ids, vectors and payloads, so a re-scan with the same settings carries every
        verdict over without reading a page. None (the default) where the store promises nothing of the kind."""
        return None

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


def _cannot_list(name: str) -> VdbguardError:
    return VdbguardError(
        f"the {name} connector cannot list a store's collections",
        'name the collections: --collection a,b (or collections = ["a", "b"] in a job file)',
    )
