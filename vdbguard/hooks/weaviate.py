"""Guard for Weaviate v4 clients and collections: ``data``, ``batch`` and the vector queries."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, ClassVar

from vdbguard.errors import RecordError, VdbguardError
from vdbguard.hooks.protector import Item, Protector, is_vector, vector_label
from vdbguard.hooks.proxy import GuardedProxy, Refused, inference_error, rebuild, with_changes

_WEAVIATE_MISSING = (
    "is missing: guard protects only explicit vectors (a server-side vectorizer would store an unprotected one)"
)


class GuardedWeaviateClient(GuardedProxy):
    """A Weaviate v4 client: ``collections.get/use/create`` and ``batch`` come back guarded."""

    _attrs: ClassVar[dict[str, str]] = {
        "collections": "GuardedWeaviateCollections",
        "batch": "GuardedWeaviateBatchFactory",
    }


class GuardedWeaviateCollections(GuardedProxy):
    _calls: ClassVar[dict[str, str]] = dict.fromkeys(
        ("get", "use", "create", "create_from_dict", "create_from_config"), "GuardedWeaviateCollection"
    )


class GuardedWeaviateCollection(GuardedProxy):
    """A Weaviate collection: ``data``, ``batch`` and the vector queries are guarded."""

    _attrs: ClassVar[dict[str, str]] = {
        "data": "GuardedWeaviateData",
        "batch": "GuardedWeaviateBatchFactory",
        **dict.fromkeys(("query", "generate", "aggregate"), "GuardedWeaviateQuery"),
    }
    _calls: ClassVar[dict[str, str]] = dict.fromkeys(
        ("with_tenant", "with_consistency_level"), "GuardedWeaviateCollection"
    )


def _weaviate_item(protector: Protector, record_id: str, vector: Any, properties: Any) -> Item:
    if vector is None:
        raise RecordError(record_id, "vector", _WEAVIATE_MISSING)
    if isinstance(vector, Mapping):
        dense = {vector_label(n): v for n, v in vector.items() if protector.wants(n)}
    elif is_vector(vector):
        dense = {"vector": vector}
    else:
        raise inference_error(record_id, "vector", vector)
    return Item(record_id, dense, payload=properties if isinstance(properties, Mapping) else None)


class _WeaviateObjects(GuardedProxy):
    """What ``data`` and batches share: one object given as ``uuid=, properties=, vector=`` arguments."""

    def _one(self, a: dict[str, Any]) -> None:
        record_id = str(a["uuid"]) if a.get("uuid") is not None else "(no uuid)"
        vector = a.get("vector")
        item = _weaviate_item(self.protector, record_id, vector, a.get("properties"))
        out = self.protector.protect([item], as_lists=True)[0]
        a["vector"] = vector if out is None else rebuild(vector, out)


class GuardedWeaviateData(_WeaviateObjects):
    _rewrites: ClassVar[dict[str, str]] = {
        **dict.fromkeys(("insert", "replace"), "_one"),
        "update": "_update",
        "insert_many": "_insert_many",
        "ingest": "_ingest",
    }

    def _update(self, a: dict[str, Any]) -> None:
        if a.get("vector") is not None:  # an update without a vector keeps the stored one
            self._one(a)

    def _insert_many(self, a: dict[str, Any]) -> None:
        a["objects"] = self._many(a["objects"])

    def _ingest(self, a: dict[str, Any]) -> None:
        a["objs"] = self._many(a["objs"])

    def _many(self, objects: Any) -> list[Any]:
        objects = list(objects)
        items = []
        for i, obj in enumerate(objects):
            if not (hasattr(obj, "properties") and hasattr(obj, "vector")):
                raise RecordError(f"#{i}", "vector", _WEAVIATE_MISSING + "; pass DataObject(..., vector=...)")
            record_id = str(obj.uuid) if obj.uuid is not None else f"#{i}"
            items.append(_weaviate_item(self.protector, record_id, obj.vector, obj.properties))
        out = self.protector.protect(items, as_lists=True)
        return [
            obj if p is None else with_changes(obj, vector=rebuild(obj.vector, p))
            for obj, p in zip(objects, out, strict=True)
        ]


class GuardedWeaviateBatchFactory(GuardedProxy):
    """``collection.batch`` / ``client.batch``: every context it opens (dynamic, fixed_size, ...) is guarded."""

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value):
            return value

        @functools.wraps(value)
        def opened(*args: Any, **kwargs: Any) -> Any:
            result = value(*args, **kwargs)
            return GuardedWeaviateBatchContext(result, self.protector) if hasattr(result, "__enter__") else result

        return opened


class GuardedWeaviateBatchContext(GuardedProxy):
    def __enter__(self) -> Any:
        return GuardedWeaviateBatch(self._inner.__enter__(), self.protector)


class GuardedWeaviateBatch(_WeaviateObjects):
    """Each ``add_object`` is protected on its own; an object that cannot be is never queued."""

    _rewrites: ClassVar[dict[str, str]] = {"add_object": "_one"}


class GuardedWeaviateQuery(GuardedProxy):
    """``query``/``generate``/``aggregate``: near_vector and hybrid(vector=) get ``apply_query``
    when the transform changes the stored space; text- and media-based searches are then refused."""

    _TEXT_SEARCHES: ClassVar[frozenset[str]] = frozenset({"near_text", "near_image", "near_media"})

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not self.protector.changes_space or not callable(value):
            return value
        if name in self._TEXT_SEARCHES:
            hint = "the store is in the transform's space: embed the query yourself and use near_vector"
            return Refused(f"Weaviate {name}", hint)
        if name in ("near_vector", "hybrid"):
            return self._rewritten(name, value, getattr(self, f"_{name}"))
        return value

    def _transform(self, vector: Any) -> Any:
        if isinstance(vector, Mapping):
            return {n: self._transform(v) if self.protector.wants(n) else v for n, v in vector.items()}
        if not is_vector(vector):
            raise VdbguardError(f"guard cannot transform a Weaviate query vector given as {type(vector).__name__}")
        return self.protector.query(vector).tolist()

    def _near_vector(self, a: dict[str, Any]) -> None:
        if self._targets_protected(a.get("target_vector")):
            a["near_vector"] = self._transform(a["near_vector"])

    def _hybrid(self, a: dict[str, Any]) -> None:
        if a.get("vector") is not None and self._targets_protected(a.get("target_vector")):
            a["vector"] = self._transform(a["vector"])

    def _targets_protected(self, target: Any) -> bool:
        """False only when the query targets named vectors that ``vector_names`` leaves unprotected."""
        names = [target] if isinstance(target, str) else target if isinstance(target, list) else None
        if names is None:
            return True
        wanted = {self.protector.wants(n) for n in names}
        if len(wanted) > 1:
            raise VdbguardError("a Weaviate query cannot target protected and unprotected vectors at once")
        return wanted.pop()
