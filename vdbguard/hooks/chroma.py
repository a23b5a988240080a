"""Guard for Chroma clients and collections: writes need explicit embeddings, which are protected."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from vdbguard.errors import VdbguardError
from vdbguard.hooks.protector import NUMBER_TYPES, Item
from vdbguard.hooks.proxy import GuardedProxy


class GuardedChromaClient(GuardedProxy):
    """A Chroma client whose collections (get/create/get_or_create/list) come back guarded."""

    _calls: ClassVar[dict[str, str]] = dict.fromkeys(
        (
            "get_collection",
            "get_or_create_collection",
            "create_collection",
            "get_collection_by_id",
            "list_collections",
        ),
        "GuardedChromaCollection",
    )


class GuardedChromaCollection(GuardedProxy):
    """A Chroma collection: add / upsert / update need explicit embeddings and protect them."""

    _calls: ClassVar[dict[str, str]] = {"fork": "GuardedChromaCollection"}
    _rewrites: ClassVar[dict[str, str]] = {**dict.fromkeys(("add", "upsert", "update"), "_write"), "query": "_query"}

    def search(self, *args: Any, **kwargs: Any) -> Any:
        if self.protector.changes_space:
            raise VdbguardError(
                "guard cannot transform Chroma search() expressions",
                "use query(query_embeddings=...) on a guarded collection",
            )
        return self._inner.search(*args, **kwargs)

    def _query(self, a: dict[str, Any]) -> None:
        if not self.protector.changes_space:
            return
        if any(a.get(k) is not None for k in ("query_texts", "query_images", "query_uris")):
            raise VdbguardError(
                "guard cannot transform queries Chroma embeds itself (query_texts/images/uris)",
                "embed the query yourself and pass query_embeddings",
            )
        if a.get("query_embeddings") is not None:
            a["query_embeddings"] = np.stack([self.protector.query(r) for r in _rows(a["query_embeddings"])])

    def _write(self, a: dict[str, Any]) -> None:
        embeddings = a.get("embeddings")
        if embeddings is None:
            given = [k for k in ("documents", "images", "uris") if a.get(k) is not None]
            if given:
                raise VdbguardError(
                    f"guard needs explicit embeddings: Chroma would embed these {'/'.join(given)} itself, unprotected",
                    "embed the documents yourself and pass embeddings=",
                )
            return  # metadata-only update: no vector is written
        single = isinstance(a["ids"], str)
        ids = [a["ids"]] if single else list(a["ids"])
        rows = _rows(embeddings)
        if len(rows) != len(ids):
            raise VdbguardError(f"{len(ids)} ids but {len(rows)} embeddings")
        documents, metadatas = a.get("documents"), a.get("metadatas")
        if single:
            for key in ("documents", "metadatas", "uris"):
                if a.get(key) is not None and isinstance(a[key], (str, Mapping)):
                    a[key] = [a[key]]
            documents, metadatas = a.get("documents"), a.get("metadatas")
        items = [
            Item(
                str(rid),
                {"embeddings": row},
                document=documents[i] if documents is not None else None,
                payload=metadatas[i] if metadatas is not None else None,
            )
            for i, (rid, row) in enumerate(zip(ids, rows, strict=True))
        ]
        out = self.protector.protect(items)
        new = [np.asarray(r, np.float32) if o is None else o["embeddings"] for r, o in zip(rows, out, strict=True)]
        a["ids"] = ids
        a["embeddings"] = np.stack(new) if len({v.shape for v in new}) == 1 else new


def _rows(embeddings: Any) -> list[Any]:
    """Chroma's one-or-many embeddings as a list of rows."""
    if isinstance(embeddings, np.ndarray):
        return [embeddings] if embeddings.ndim == 1 else list(embeddings)
    embeddings = list(embeddings)
    if embeddings and isinstance(embeddings[0], NUMBER_TYPES):
        return [embeddings]
    return embeddings
