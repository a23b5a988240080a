"""Guard for Pinecone clients and indexes: upserts and updates are protected, vector queries follow."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from vdbguard.errors import RecordError, VdbguardError
from vdbguard.hooks.protector import Item
from vdbguard.hooks.proxy import GuardedProxy, with_changes


class GuardedPinecone(GuardedProxy):
    """A Pinecone client whose ``Index(...)`` handles come back guarded."""

    _calls: ClassVar[dict[str, str]] = dict.fromkeys(("Index", "index"), "GuardedPineconeIndex")
    _refused: ClassVar[dict[str, str]] = {
        "IndexAsyncio": "async indexes are not supported by guard yet: use pc.Index(...)",
    }


class GuardedPineconeIndex(GuardedProxy):
    """A Pinecone index: upsert (tuples, dicts, Vector objects) and update(values=) are protected."""

    _refused: ClassVar[dict[str, str]] = {
        "upsert_from_dataframe": "convert the frame to records and call upsert(vectors=...)",
        "upsert_records": "integrated inference embeds text on Pinecone's side, unprotected: "
        "embed it yourself and call upsert(vectors=...)",
        "start_import": "bulk imports bypass the guard: protect the files first (vdbguard protect) or upsert",
        "documents": "schema-based document indexes are not supported by guard: use a vector index",
    }
    _rewrites: ClassVar[dict[str, str]] = {
        "upsert": "_vectors",
        "update": "_values",
        **dict.fromkeys(("query", "query_namespaces"), "_query_vector"),
    }

    def search(self, *args: Any, **kwargs: Any) -> Any:
        return self._text_search("search", *args, **kwargs)

    def search_records(self, *args: Any, **kwargs: Any) -> Any:
        return self._text_search("search_records", *args, **kwargs)

    def _text_search(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self.protector.changes_space:
            raise VdbguardError(f"guard cannot transform Pinecone {name}() queries", "use query(vector=...)")
        return getattr(self._inner, name)(*args, **kwargs)

    def _query_vector(self, a: dict[str, Any]) -> None:
        if self.protector.changes_space and a.get("vector") is not None:
            a["vector"] = self.protector.query(a["vector"]).tolist()

    def _values(self, a: dict[str, Any]) -> None:
        if a.get("values") is not None:
            record_id = str(a.get("id"))
            out = self.protector.protect([Item(record_id, {"values": a["values"]})], as_lists=True)[0]
            if out is not None:
                a["values"] = out["values"]

    def _vectors(self, a: dict[str, Any]) -> None:
        vectors = list(a["vectors"])
        items = []
        for i, vector in enumerate(vectors):
            record_id, values, metadata = _pinecone_parts(i, vector)
            items.append(Item(record_id, {} if values is None else {"values": values}, payload=metadata))
        out = self.protector.protect(items, as_lists=True)
        a["vectors"] = [v if not o else _pinecone_with(v, o["values"]) for v, o in zip(vectors, out, strict=True)]


def _pinecone_parts(index: int, vector: Any) -> tuple[str, Any, Mapping[str, Any] | None]:
    if isinstance(vector, tuple):
        if len(vector) not in (2, 3):
            raise RecordError(f"#{index}", "vector", "must be a tuple (id, values) or (id, values, metadata)")
        return str(vector[0]), vector[1], vector[2] if len(vector) == 3 else None
    if isinstance(vector, Mapping):
        return str(vector.get("id", f"#{index}")), vector.get("values"), vector.get("metadata")
    if hasattr(vector, "id") and hasattr(vector, "values"):
        values = vector.values
        return str(vector.id), values if values is not None and len(values) else None, getattr(vector, "metadata", None)
    raise RecordError(f"#{index}", "vector", f"is a {type(vector).__name__}; pass tuples, dicts or pinecone.Vector")


def _pinecone_with(vector: Any, values: list[float]) -> Any:
    if isinstance(vector, tuple):
        return (vector[0], values, *vector[2:])
    if isinstance(vector, Mapping):
        return {**vector, "values": values}
    return with_changes(vector, values=values)
