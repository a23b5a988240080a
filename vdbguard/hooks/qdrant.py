"""Guard for ``qdrant_client.QdrantClient``: its point writes are protected, its queries follow the transform."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from vdbguard.errors import VdbguardError
from vdbguard.hooks.protector import Item, is_vector, vector_label
from vdbguard.hooks.proxy import GuardedProxy, as_list, inference_error, rebuild


class GuardedQdrant(GuardedProxy):
    """``qdrant_client.QdrantClient``: upsert / upload_points / upload_collection / update_vectors /
    batch_update_points are protected; query_points / query_points_groups / query_batch_points queries
    get ``apply_query`` when the transform changes the stored space."""

    _rewrites: ClassVar[dict[str, str]] = {
        **dict.fromkeys(("upsert", "upload_points", "update_vectors"), "_points_arg"),
        "upload_collection": "_upload_collection",
        "batch_update_points": "_operations",
        **dict.fromkeys(("query_points", "query_points_groups"), "_query_args"),
        "query_batch_points": "_query_requests",
    }

    # -- writes

    def _points_arg(self, a: dict[str, Any]) -> None:
        a["points"] = self._points(a["points"])

    def _points(self, points: Any) -> Any:
        from qdrant_client import models

        if isinstance(points, models.Batch):
            return self._batch(points)
        points = list(points)
        items = []
        for point in points:
            if not isinstance(point, (models.PointStruct, models.PointVectors)):
                raise VdbguardError(
                    f"guard cannot protect Qdrant points of type {type(point).__name__}",
                    "pass qdrant_client.models.PointStruct (or PointVectors) objects, or a models.Batch",
                )
            record_id = str(point.id)
            items.append(Item(record_id, self._dense(record_id, point.vector), payload=getattr(point, "payload", None)))
        out = self.protector.protect(items, as_lists=True)
        return [
            p if o is None else p.model_copy(update={"vector": rebuild(p.vector, o)})
            for p, o in zip(points, out, strict=True)
        ]

    def _batch(self, batch: Any) -> Any:
        ids, vectors, payloads = list(batch.ids), batch.vectors, batch.payloads
        if isinstance(vectors, Mapping):
            columns = {name: list(column) for name, column in vectors.items()}
            for name, column in columns.items():
                if len(column) != len(ids):
                    raise VdbguardError(f"Qdrant Batch has {len(ids)} ids but {len(column)} vectors named {name!r}")
            rows = [{name: column[i] for name, column in columns.items()} for i in range(len(ids))]
        else:
            rows = list(vectors)
            if len(rows) != len(ids):
                raise VdbguardError(f"Qdrant Batch has {len(ids)} ids but {len(rows)} vectors")
        items = [
            Item(str(pid), self._dense(str(pid), row), payload=payloads[i] if payloads else None)
            for i, (pid, row) in enumerate(zip(ids, rows, strict=True))
        ]
        out = self.protector.protect(items, as_lists=True)
        new_rows = [row if o is None else rebuild(row, o) for row, o in zip(rows, out, strict=True)]
        if isinstance(vectors, Mapping):
            new_vectors: Any = {name: [row[name] for row in new_rows] for name in vectors}
        else:
            new_vectors = new_rows
        return batch.model_copy(update={"vectors": new_vectors})

    def _dense(self, record_id: str, vector: Any) -> dict[str, Any]:
        """The dense vectors of one point by label: ``vector`` or ``vector['name']``; sparse ones skipped."""
        if is_vector(vector):
            return {"vector": vector}
        if isinstance(vector, Mapping):
            dense = {}
            for name, value in vector.items():
                if is_vector(value):
                    if self.protector.wants(name):
                        dense[vector_label(name)] = value
                elif not _is_sparse(value):
                    raise inference_error(record_id, vector_label(name), value)
            return dense
        raise inference_error(record_id, "vector", vector)

    def _upload_collection(self, a: dict[str, Any]) -> None:
        vectors = a["vectors"]
        ids = list(a["ids"]) if a.get("ids") is not None else None
        payload = list(a["payload"]) if a.get("payload") is not None else None
        if ids is not None:
            a["ids"] = ids  # iterators the guard has read go on as the lists it read them into
        if payload is not None:
            a["payload"] = payload
        if isinstance(vectors, np.ndarray) and vectors.ndim == 2 and not self.protector.policy.selective:
            if ids is not None and len(ids) != len(vectors):
                raise VdbguardError(f"upload_collection got {len(ids)} ids for {len(vectors)} vectors")
            record_ids = [str(i) for i in ids] if ids is not None else [f"#{i}" for i in range(len(vectors))]
            a["vectors"] = self.protector.protect_matrix(vectors, record_ids)  # numpy in, numpy out
            return
        if isinstance(vectors, Mapping):
            columns = {name: list(column) for name, column in vectors.items()}
            count = len(next(iter(columns.values()), []))
            rows: list[Any] = [{name: column[i] for name, column in columns.items()} for i in range(count)]
        else:
            rows = list(vectors)
        if ids is not None and len(ids) != len(rows):
            raise VdbguardError(f"upload_collection got {len(ids)} ids for {len(rows)} vectors")
        record_ids = [str(ids[i]) if ids is not None else f"#{i}" for i in range(len(rows))]
        items = [
            Item(rid, self._dense(rid, row), payload=payload[i] if payload is not None and i < len(payload) else None)
            for i, (rid, row) in enumerate(zip(record_ids, rows, strict=True))
        ]
        out = self.protector.protect(items, as_lists=True)
        new_rows = [row if o is None else rebuild(row, o) for row, o in zip(rows, out, strict=True)]
        if isinstance(vectors, Mapping):
            a["vectors"] = {name: np.asarray([row[name] for row in new_rows], dtype=np.float32) for name in vectors}
        else:
            a["vectors"] = [as_list(v) for v in new_rows]

    def _operations(self, a: dict[str, Any]) -> None:
        from qdrant_client import models

        operations, decisions = [], []
        for op in a["update_operations"]:
            if isinstance(op, models.UpsertOperation):
                inner = op.upsert
                if isinstance(inner, models.PointsBatch):
                    inner = inner.model_copy(update={"batch": self._batch(inner.batch)})
                else:
                    inner = inner.model_copy(update={"points": self._points(inner.points)})
                op = op.model_copy(update={"upsert": inner})
                decisions += self.protector.last_decisions
            elif isinstance(op, models.UpdateVectorsOperation):
                inner = op.update_vectors.model_copy(update={"points": self._points(op.update_vectors.points)})
                op = op.model_copy(update={"update_vectors": inner})
                decisions += self.protector.last_decisions
            elif not isinstance(op, dict) and type(op).__module__.startswith("qdrant_client.http"):
                pass  # deletes, payload and vector-name operations carry no vectors
            else:
                raise VdbguardError(
                    f"guard cannot inspect Qdrant update operation {type(op).__name__}",
                    "pass qdrant_client.models operations (UpsertOperation, UpdateVectorsOperation, ...)",
                )
            operations.append(op)
        a["update_operations"] = operations
        self.protector.policy.last_decisions = decisions

    # -- queries

    def _query_requests(self, a: dict[str, Any]) -> None:
        if self.protector.changes_space:
            a["requests"] = [
                r.model_copy(update={"query": self._query(r.query, r.using), "prefetch": self._prefetch(r.prefetch)})
                for r in a["requests"]
            ]

    def _query_args(self, a: dict[str, Any]) -> None:
        if self.protector.changes_space:
            a["query"] = self._query(a.get("query"), a.get("using"))
            a["prefetch"] = self._prefetch(a.get("prefetch"))

    def _prefetch(self, prefetch: Any) -> Any:
        if prefetch is None:
            return None
        if isinstance(prefetch, list):
            return [self._prefetch(p) for p in prefetch]
        query = self._query(prefetch.query, prefetch.using)
        return prefetch.model_copy(update={"query": query, "prefetch": self._prefetch(prefetch.prefetch)})

    def _query(self, query: Any, using: str | None = None) -> Any:
        """The query with every raw vector in it moved into the stored space (unless ``using`` names a
        vector the guard leaves unprotected)."""
        from qdrant_client import models

        if not self.protector.wants(using):
            return query
        vector = self._query_vector
        if query is None or is_vector(query) or isinstance(query, (int, str)) or _is_sparse(query):
            return vector(query)
        if isinstance(query, models.NearestQuery):
            return query.model_copy(update={"nearest": vector(query.nearest)})
        if isinstance(query, models.RecommendQuery):
            rec = query.recommend
            update = {k: [vector(v) for v in getattr(rec, k) or []] for k in ("positive", "negative")}
            return query.model_copy(update={"recommend": rec.model_copy(update=update)})
        if isinstance(query, models.DiscoverQuery):
            disc = query.discover
            context = disc.context if isinstance(disc.context, list) else [disc.context] if disc.context else []
            update = {"target": vector(disc.target), "context": [self._pair(p) for p in context]}
            return query.model_copy(update={"discover": disc.model_copy(update=update)})
        if isinstance(query, models.ContextQuery):
            context = query.context
            pairs = [self._pair(p) for p in context] if isinstance(context, list) else self._pair(context)
            return query.model_copy(update={"context": pairs})
        if isinstance(query, models.RelevanceFeedbackQuery):
            rf = query.relevance_feedback
            feedback = [f.model_copy(update={"example": vector(f.example)}) for f in rf.feedback]
            update = {"target": vector(rf.target), "feedback": feedback}
            return query.model_copy(update={"relevance_feedback": rf.model_copy(update=update)})
        if isinstance(query, (models.Document, models.Image, models.InferenceObject)):
            return vector(query)
        return query  # order-by, fusion, formula and sample queries carry no vectors

    def _pair(self, pair: Any) -> Any:
        return pair.model_copy(
            update={"positive": self._query_vector(pair.positive), "negative": self._query_vector(pair.negative)}
        )

    def _query_vector(self, value: Any) -> Any:
        if value is None or isinstance(value, (int, str)) or _is_sparse(value) or type(value).__name__ == "UUID":
            return value  # point ids are looked up in the (already protected) store
        if is_vector(value):
            return self.protector.query(value).tolist()
        raise VdbguardError(
            f"guard cannot transform a Qdrant query given as {type(value).__name__}",
            "embed queries yourself and pass the vector: the store is in the transform's space",
        )


def _is_sparse(value: Any) -> bool:
    return type(value).__name__ == "SparseVector"
