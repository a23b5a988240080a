"""Put a transform into an application's own vector-database client, so every write is protected.

``guard(client, transform)`` returns an object used exactly like the official client: attribute
access is delegated to it, and the calls that write vectors run them through ``transform.apply``
first (queries through ``transform.apply_query`` when the transform changes the stored space, e.g.
keyed rotation). Protecting vectors at write time is the defense embedding-inversion work calls for:
stored embeddings alone give back much of their text (Morris et al., "Text Embeddings Reveal (Almost)
As Much As Text", EMNLP 2023), so they must be perturbed before they reach the store.

Fail closed: every record of a call is checked, decided on and transformed before anything is sent;
if any record cannot be protected (the transform, policy or detector raises, the transform returns
NaN, a vector is not a list of numbers, a vector would be computed by the store or its embedding
function instead of given) the call raises a ``RecordError`` naming the record and field and nothing
of that call reaches the store. Write paths the guard cannot protect (server-side embedding, bulk
imports, async clients) are refused rather than passed through. Sparse vectors are not transformed.
Build noise transforms with ``seed=None`` for production: two processes (or guards) created from one
seed add the same noise sequence to different records, and shared noise cancels in differences.

Covered: ``qdrant_client.QdrantClient``; Chroma clients and collections; Pinecone clients and
indexes; Weaviate v4 clients and collections (``data``, ``batch``, ``query``/``generate``/``aggregate``).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from vdbguard.errors import RecordError, VdbguardError
from vdbguard.hooks.policy import Candidate, Decision, Policy, ProtectAll, ProtectFlagged
from vdbguard.transforms.base import Transform

__all__ = ["Item", "Protector", "changes_space", "guard", "resolve_policy"]

_NUMBER = (int, float, np.number)


def changes_space(transform: Transform) -> bool:
    """Whether stored vectors live in another space than raw queries (so queries need ``apply_query``).

    A transform may say so with a ``changes_space`` attribute; otherwise overriding ``apply_query``
    is taken as the sign (the base class's is the identity).
    """
    explicit = getattr(transform, "changes_space", None)
    if isinstance(explicit, bool):
        return explicit
    return type(transform).apply_query is not Transform.apply_query


@dataclass
class Item:
    """One record of a write call: its id, its dense vectors by field label, and what a policy reads."""

    record_id: str
    vectors: dict[str, Any]
    document: str | None = None
    payload: Mapping[str, Any] | None = field(default=None, repr=False)


class Protector:
    """The engine-neutral core: validate, decide, transform, validate again, all before any write."""

    def __init__(
        self, transform: Transform, policy: Policy | None = None, *, vector_names: Collection[str] | None = None
    ) -> None:
        if not isinstance(transform, Transform):
            raise VdbguardError(
                f"guard needs a vdbguard Transform, got {type(transform).__name__}",
                "build one with vdbguard.transforms.load_transform_class(name)(strength)",
            )
        self.transform = transform
        self.policy = policy if policy is not None else ProtectAll()
        self.changes_space = changes_space(transform)
        self.vector_names = frozenset(vector_names) if vector_names is not None else None
        self.name = str(getattr(transform, "name", type(transform).__name__))
        if self.policy.selective and self.changes_space:
            raise VdbguardError(
                f"transform {self.name!r} changes the stored space, so it cannot protect only some records",
                "queries are transformed too and would miss the unprotected records: use ProtectAll()",
            )

    @property
    def last_decisions(self) -> list[Decision]:
        return self.policy.last_decisions

    def wants(self, name: str | None) -> bool:
        """Whether the named vector is protected (``vector_names``; the unnamed vector always is)."""
        return name is None or self.vector_names is None or name in self.vector_names

    def protect(self, items: Sequence[Item], *, as_lists: bool = False) -> list[dict[str, Any] | None]:
        """Per item: protected vectors by field label, or None where the policy leaves the item as is.

        Values are float32 arrays (1-D, or 2-D for multi-vectors), or nested lists with ``as_lists``.
        Each field is converted and transformed as one matrix when its vectors share a dimension.
        """
        columns: dict[str, tuple[list[int], list[Any]]] = {}
        for i, item in enumerate(items):
            for label, value in item.vectors.items():
                column = columns.setdefault(label, ([], []))
                column[0].append(i)
                column[1].append(value)
        matrices = {label: _matrix(items, label, *column) for label, column in columns.items()}
        decisions = self._decide(items, columns, matrices)
        out: list[dict[str, Any] | None] = [{} if d.protect else None for d in decisions]
        kept = any(o is None for o in out)
        for label, (members, values) in columns.items():
            matrix = matrices[label]
            chosen = [k for k, i in enumerate(members) if out[i] is not None]
            if not chosen:
                continue
            if matrix is None:  # multi-vectors or mixed dimensions: one matrix per dimension
                self._protect_ragged(items, label, [members[k] for k in chosen], [values[k] for k in chosen], out, kept)
                continue
            rows = matrix if len(chosen) == len(members) else matrix[chosen]
            targets = [members[k] for k in chosen]
            result = self._apply(rows, [(items[i].record_id, 1) for i in targets], label)
            self._check_dimension(kept, rows.shape[1], result.shape[1])
            for i, row in zip(targets, result.tolist() if as_lists else result, strict=True):
                out[i][label] = row  # type: ignore[index]
        if as_lists:
            for entry in out:
                for label, value in (entry or {}).items():
                    if isinstance(value, np.ndarray):
                        entry[label] = value.tolist()  # type: ignore[index]
        return out

    def _protect_ragged(
        self, items: Sequence[Item], label: str, members: list[int], values: list[Any], out: list, kept: bool
    ) -> None:
        arrays = [_checked(items[i].record_id, label, v) for i, v in zip(members, values, strict=True)]
        groups: dict[int, list[int]] = {}
        for k, arr in enumerate(arrays):
            groups.setdefault(arr.shape[-1], []).append(k)
        for dim, ks in groups.items():
            parts = [arrays[k].reshape(-1, dim) for k in ks]
            owners = [(items[members[k]].record_id, len(p)) for k, p in zip(ks, parts, strict=True)]
            result = self._apply(parts[0] if len(parts) == 1 else np.concatenate(parts), owners, label)
            self._check_dimension(kept, dim, result.shape[1])
            start = 0
            for k, (_, n) in zip(ks, owners, strict=True):
                rows = result[start : start + n]
                start += n
                out[members[k]][label] = rows[0] if arrays[k].ndim == 1 else rows

    def _check_dimension(self, kept: bool, before: int, after: int) -> None:
        if kept and before != after:
            raise VdbguardError(
                f"transform {self.name!r} changes the dimension ({before} -> {after}) "
                "but the policy leaves some records unprotected",
                "use ProtectAll() with dimension-changing transforms",
            )

    def query(self, value: Any, what: str = "query vector") -> np.ndarray:
        """``apply_query`` on one query vector (or a multi-vector): float32, same nesting as given."""
        arr = _checked("query", what, value)
        try:
            result = np.asarray(self.transform.apply_query(arr.reshape(-1, arr.shape[-1])), dtype=np.float32)
        except Exception as exc:
            raise VdbguardError(
                f"transform {self.name!r} could not transform the {what}: {type(exc).__name__}: {exc}"
            ) from exc
        if result.ndim != 2 or not np.isfinite(result).all():
            raise VdbguardError(f"transform {self.name!r} turned the {what} into NaN, infinite or misshapen values")
        return result[0] if arr.ndim == 1 else result

    # -- internals -------------------------------------------------------------------------------

    def _decide(
        self,
        items: Sequence[Item],
        columns: dict[str, tuple[list[int], list[Any]]],
        matrices: dict[str, np.ndarray | None],
    ) -> list[Decision]:
        if not self.policy.selective:
            return self.policy.decide([Candidate(it.record_id) for it in items])
        first: list[np.ndarray | None] = [None] * len(items)  # the first dense single vector of each item
        for label, (members, values) in reversed(list(columns.items())):
            matrix = matrices[label]
            for k, i in enumerate(members):
                vector = matrix[k] if matrix is not None else _checked(items[i].record_id, label, values[k])
                if vector.ndim == 1:
                    first[i] = vector
        candidates = [Candidate(it.record_id, it.document, it.payload, v) for it, v in zip(items, first, strict=True)]
        try:
            return self.policy.decide(candidates)
        except VdbguardError:
            raise
        except Exception as exc:
            failing = next((c.record_id for c in candidates if _raises(self.policy.decide, [c])), None)
            problem = f"could not be judged by policy {type(self.policy).__name__}: {type(exc).__name__}: {exc}"
            if failing is None:
                raise VdbguardError(f"policy {type(self.policy).__name__} failed: {exc}") from exc
            raise RecordError(failing, "policy", problem) from exc

    def _apply(self, rows: np.ndarray, owners: list[tuple[str, int]], label: str) -> np.ndarray:
        try:
            result = self.transform.apply(rows)
        except Exception as exc:
            raise self._locate(rows, owners, label, exc) from exc
        result = np.asarray(result, dtype=np.float32)
        if result.ndim != 2 or result.shape[0] != rows.shape[0]:
            raise VdbguardError(
                f"transform {self.name!r} returned shape {result.shape} for {rows.shape[0]} vectors",
                "a transform must return one row per input vector",
            )
        bad = np.flatnonzero(~np.isfinite(result).all(axis=1))
        if bad.size:
            owner = _owner_of(int(bad[0]), owners)
            raise RecordError(owner, label, f"was turned into NaN or infinite values by transform {self.name!r}")
        return result

    def _locate(self, rows: np.ndarray, owners: list[tuple[str, int]], label: str, exc: Exception) -> VdbguardError:
        start = 0
        for record_id, n in owners:
            if _raises(self.transform.apply, rows[start : start + n]):
                return RecordError(
                    record_id, label, f"could not be protected by transform {self.name!r}: {type(exc).__name__}: {exc}"
                )
            start += n
        return VdbguardError(
            f"transform {self.name!r} failed on a batch of {len(owners)} records: {type(exc).__name__}: {exc}"
        )


def _matrix(items: Sequence[Item], label: str, members: list[int], values: list[Any]) -> np.ndarray | None:
    """The field's vectors as one finite float32 matrix when they are flat and of one dimension, else
    None (multi-vectors, mixed dimensions, or bad values, which per-record checks then name)."""
    try:
        matrix = np.asarray(values, dtype=np.float32)
    except (TypeError, ValueError):
        return None
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        return None
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        bad = members[int(np.flatnonzero(~finite)[0])]
        raise RecordError(items[bad].record_id, label, "contains NaN or infinite values")
    return matrix


def _raises(fn: Callable[[Any], Any], arg: Any) -> bool:
    try:
        fn(arg)
    except Exception:
        return True
    return False


def _owner_of(row: int, owners: list[tuple[str, int]]) -> str:
    for record_id, n in owners:
        if row < n:
            return record_id
        row -= n
    return owners[-1][0]


def _checked(record_id: str, label: str, value: Any) -> np.ndarray:
    """A vector (1-D) or multi-vector (2-D) as finite float32, or a RecordError saying what is wrong."""
    try:
        arr = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise RecordError(record_id, label, "is not a list of numbers (or a list of such lists)") from exc
    if arr.ndim not in (1, 2) or arr.size == 0:
        raise RecordError(record_id, label, f"has shape {arr.shape}, expected a non-empty list of numbers")
    if not np.isfinite(arr).all():
        raise RecordError(record_id, label, "contains NaN or infinite values")
    return arr


def _is_vector(value: Any) -> bool:
    """A dense vector or multi-vector given as numbers (not an id, a sparse vector or an inference object)."""
    if isinstance(value, np.ndarray):
        return True
    if isinstance(value, (list, tuple)):
        return not value or isinstance(value[0], (*_NUMBER, list, tuple, np.ndarray))
    return False


def _replace(obj: Any, **changes: Any) -> Any:
    """A copy of a record object with some fields changed; the caller's object is never mutated."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.replace(obj, **changes)
    if hasattr(obj, "model_copy"):
        return obj.model_copy(update=changes)
    try:
        import msgspec

        if isinstance(obj, msgspec.Struct):
            return msgspec.structs.replace(obj, **changes)
    except ImportError:
        pass
    new = copy.copy(obj)
    for key, value in changes.items():
        setattr(new, key, value)
    return new


@functools.lru_cache(maxsize=512)
def _signature(cls: type, name: str) -> inspect.Signature | None:
    """The parameters of ``cls.name`` as declared on the class (instances may hold generic wrappers)."""
    static = inspect.getattr_static(cls, name, None)
    if isinstance(static, staticmethod):
        return inspect.signature(static.__func__)
    if inspect.isfunction(static):
        sig = inspect.signature(static)
        return sig.replace(parameters=list(sig.parameters.values())[1:])
    return None


def _rebind(owner: Any, name: str, args: tuple, kwargs: dict, convert: Callable[[dict[str, Any]], None]) -> Any:
    """Call ``owner.name`` after ``convert`` rewrote its arguments, bound by parameter name, in place."""
    method = getattr(owner, name)
    try:
        sig = _signature(type(owner), name) or inspect.signature(method)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return method(*args, **kwargs)  # let the client report its own usage error
    convert(bound.arguments)
    return method(*bound.args, **bound.kwargs)


def _label(name: str | None, base: str = "vector") -> str:
    return base if name is None else f"{base}[{name!r}]"


class _Refused:
    """Stands in for a write path the guard cannot protect: calling it, or reaching into it, raises."""

    def __init__(self, what: str, hint: str) -> None:
        self._what, self._hint = what, hint

    def _error(self) -> VdbguardError:
        return VdbguardError(f"{self._what} is not protected by vdbguard's guard and was refused", self._hint)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise self._error()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise self._error()


class _Guarded:
    """Delegates everything to the wrapped client object; subclasses intercept what writes vectors.

    ``_calls`` wraps the results of those methods (e.g. collections a client hands out) and
    ``_attrs`` wraps attribute values, so nothing obtained through a guarded object is unguarded.
    """

    _calls: ClassVar[dict[str, str]] = {}
    _attrs: ClassVar[dict[str, str]] = {}
    _refused: ClassVar[dict[str, str]] = {}

    def __init__(self, inner: Any, protector: Protector) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "protector", protector)

    def __getattr__(self, name: str) -> Any:
        if name in ("_inner", "protector"):  # not yet set (copy, pickle): never recurse
            raise AttributeError(name)
        if name in self._refused:
            return _Refused(f"{type(self._inner).__name__}.{name}", self._refused[name])
        value = getattr(self._inner, name)
        if name in self._attrs:
            return _WRAPPERS[self._attrs[name]](value, self.protector)
        if name in self._calls:
            kind = self._calls[name]

            @functools.wraps(value)
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                return _wrap_result(value(*args, **kwargs), kind, self.protector)

            return wrapped
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self._inner)) | set(super().__dir__()))

    def __repr__(self) -> str:
        return f"guard({self._inner!r}, transform={self.protector.name!r})"

    def __enter__(self) -> Any:
        self._inner.__enter__()
        return self

    def __exit__(self, *exc: object) -> Any:
        return self._inner.__exit__(*exc)

    @property
    def last_decisions(self) -> list[Decision]:
        """The policy's decisions for the records of the last write call."""
        return self.protector.last_decisions


def _wrap_result(value: Any, kind: str, protector: Protector) -> Any:
    wrapper = _WRAPPERS[kind]
    if isinstance(value, list):
        return [wrapper(v, protector) for v in value]
    return wrapper(value, protector)


# -- Qdrant -------------------------------------------------------------------------------------------


class GuardedQdrant(_Guarded):
    """``qdrant_client.QdrantClient``: upsert / upload_points / upload_collection / update_vectors /
    batch_update_points are protected; query_points / query_points_groups / query_batch_points queries
    get ``apply_query`` when the transform changes the stored space."""

    def upsert(self, *args: Any, **kwargs: Any) -> Any:
        return _rebind(self._inner, "upsert", args, kwargs, lambda a: a.update(points=self._points(a["points"])))

    def upload_points(self, *args: Any, **kwargs: Any) -> Any:
        return _rebind(self._inner, "upload_points", args, kwargs, lambda a: a.update(points=self._points(a["points"])))

    def update_vectors(self, *args: Any, **kwargs: Any) -> Any:
        return _rebind(
            self._inner, "update_vectors", args, kwargs, lambda a: a.update(points=self._points(a["points"]))
        )

    def upload_collection(self, *args: Any, **kwargs: Any) -> Any:
        return _rebind(self._inner, "upload_collection", args, kwargs, self._upload_collection)

    def batch_update_points(self, *args: Any, **kwargs: Any) -> Any:
        return _rebind(self._inner, "batch_update_points", args, kwargs, self._operations)

    def query_points(self, *args: Any, **kwargs: Any) -> Any:
        return _rebind(self._inner, "query_points", args, kwargs, self._query_args)

    def query_points_groups(self, *args: Any, **kwargs: Any) -> Any:
        return _rebind(self._inner, "query_points_groups", args, kwargs, self._query_args)

    def query_batch_points(self, *args: Any, **kwargs: Any) -> Any:
        def convert(a: dict[str, Any]) -> None:
            if self.protector.changes_space:
                a["requests"] = [
                    r.model_copy(
                        update={"query": self._query(r.query, r.using), "prefetch": self._prefetch(r.prefetch)}
                    )
                    for r in a["requests"]
                ]

        return _rebind(self._inner, "query_batch_points", args, kwargs, convert)

    # -- writes

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
            p if o is None else p.model_copy(update={"vector": _rebuild(p.vector, o)})
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
        new_rows = [row if o is None else _rebuild(row, o) for row, o in zip(rows, out, strict=True)]
        if isinstance(vectors, Mapping):
            new_vectors: Any = {name: [row[name] for row in new_rows] for name in vectors}
        else:
            new_vectors = new_rows
        return batch.model_copy(update={"vectors": new_vectors})

    def _dense(self, record_id: str, vector: Any) -> dict[str, Any]:
        """The dense vectors of one point by label: ``vector`` or ``vector['name']``; sparse ones skipped."""
        if _is_vector(vector):
            return {"vector": vector}
        if isinstance(vector, Mapping):
            dense = {}
            for name, value in vector.items():
                if _is_vector(value):
                    if self.protector.wants(name):
                        dense[_label(name)] = value
                elif not _is_sparse(value):
                    raise _inference_error(record_id, _label(name), value)
            return dense
        raise _inference_error(record_id, "vector", vector)

    def _upload_collection(self, a: dict[str, Any]) -> None:
        vectors = a["vectors"]
        ids = list(a["ids"]) if a.get("ids") is not None else None
        payload = list(a["payload"]) if a.get("payload") is not None else None
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
        new_rows = [row if o is None else _rebuild(row, o) for row, o in zip(rows, out, strict=True)]
        if isinstance(vectors, Mapping):
            a["vectors"] = {name: np.asarray([row[name] for row in new_rows], dtype=np.float32) for name in vectors}
        else:
            a["vectors"] = [v.tolist() if isinstance(v, np.ndarray) else v for v in new_rows]
        if ids is not None:
            a["ids"] = ids
        if payload is not None:
            a["payload"] = payload

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
        if query is None or _is_vector(query) or isinstance(query, (int, str)) or _is_sparse(query):
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
        if _is_vector(value):
            return self.protector.query(value).tolist()
        raise VdbguardError(
            f"guard cannot transform a Qdrant query given as {type(value).__name__}",
            "embed queries yourself and pass the vector: the store is in the transform's space",
        )


def _is_sparse(value: Any) -> bool:
    return type(value).__name__ == "SparseVector"


def _inference_error(record_id: str, label: str, value: Any) -> RecordError:
    return RecordError(
        record_id,
        label,
        f"is a {type(value).__name__}, not a list of numbers: guard protects only explicit vectors "
        "(vectors the store computes itself would be stored unprotected)",
    )


def _rebuild(original: Any, protected: dict[str, Any]) -> Any:
    """The point's vector value with the protected labels replaced (as lists, for the client)."""
    if "vector" in protected:
        return _as_list(protected["vector"])
    new = dict(original)
    for name in original:
        label = _label(name)
        if label in protected:
            new[name] = _as_list(protected[label])
    return new


def _as_list(value: Any) -> Any:
    return value.tolist() if isinstance(value, np.ndarray) else value


# -- Chroma -------------------------------------------------------------------------------------------


class GuardedChromaClient(_Guarded):
    """A Chroma client whose collections (get/create/get_or_create/list) come back guarded."""

    _calls: ClassVar[dict[str, str]] = {
        name: "chroma_collection"
        for name in (
            "get_collection",
            "get_or_create_collection",
            "create_collection",
            "get_collection_by_id",
            "list_collections",
        )
    }


class GuardedChromaCollection(_Guarded):
    """A Chroma collection: add / upsert / update need explicit embeddings and protect them."""

    _calls: ClassVar[dict[str, str]] = {"fork": "chroma_collection"}

    def add(self, *args: Any, **kwargs: Any) -> Any:
        return _rebind(self._inner, "add", args, kwargs, self._write)

    def upsert(self, *args: Any, **kwargs: Any) -> Any:
        return _rebind(self._inner, "upsert", args, kwargs, self._write)

    def update(self, *args: Any, **kwargs: Any) -> Any:
        return _rebind(self._inner, "update", args, kwargs, self._write)

    def query(self, *args: Any, **kwargs: Any) -> Any:
        def convert(a: dict[str, Any]) -> None:
            if not self.protector.changes_space:
                return
            if any(a.get(k) is not None for k in ("query_texts", "query_images", "query_uris")):
                raise VdbguardError(
                    "guard cannot transform queries Chroma embeds itself (query_texts/images/uris)",
                    "embed the query yourself and pass query_embeddings",
                )
            if a.get("query_embeddings") is not None:
                a["query_embeddings"] = np.stack([self.protector.query(r) for r in _rows(a["query_embeddings"])])

        return _rebind(self._inner, "query", args, kwargs, convert)

    def search(self, *args: Any, **kwargs: Any) -> Any:
        if self.protector.changes_space:
            raise VdbguardError(
                "guard cannot transform Chroma search() expressions",
                "use query(query_embeddings=...) on a guarded collection",
            )
        return self._inner.search(*args, **kwargs)

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
    if embeddings and isinstance(embeddings[0], _NUMBER):
        return [embeddings]
    return embeddings


# -- Pinecone -----------------------------------------------------------------------------------------


class GuardedPinecone(_Guarded):
    """A Pinecone client whose ``Index(...)`` handles come back guarded."""

    _calls: ClassVar[dict[str, str]] = {"Index": "pinecone_index", "index": "pinecone_index"}
    _refused: ClassVar[dict[str, str]] = {
        "IndexAsyncio": "async indexes are not supported by guard yet: use pc.Index(...)",
    }


class GuardedPineconeIndex(_Guarded):
    """A Pinecone index: upsert (tuples, dicts, Vector objects) and update(values=) are protected."""

    _refused: ClassVar[dict[str, str]] = {
        "upsert_from_dataframe": "convert the frame to records and call upsert(vectors=...)",
        "upsert_records": "integrated inference embeds text on Pinecone's side, unprotected: "
        "embed it yourself and call upsert(vectors=...)",
        "start_import": "bulk imports bypass the guard: protect the files first (vdbguard protect) or upsert",
        "documents": "schema-based document indexes are not supported by guard: use a vector index",
    }

    def upsert(self, *args: Any, **kwargs: Any) -> Any:
        return _rebind(self._inner, "upsert", args, kwargs, self._vectors)

    def update(self, *args: Any, **kwargs: Any) -> Any:
        def convert(a: dict[str, Any]) -> None:
            if a.get("values") is not None:
                record_id = str(a.get("id"))
                out = self.protector.protect([Item(record_id, {"values": a["values"]})], as_lists=True)[0]
                if out is not None:
                    a["values"] = out["values"]

        return _rebind(self._inner, "update", args, kwargs, convert)

    def query(self, *args: Any, **kwargs: Any) -> Any:
        return _rebind(self._inner, "query", args, kwargs, self._query_vector)

    def query_namespaces(self, *args: Any, **kwargs: Any) -> Any:
        return _rebind(self._inner, "query_namespaces", args, kwargs, self._query_vector)

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
    return _replace(vector, values=values)


# -- Weaviate -----------------------------------------------------------------------------------------

_WEAVIATE_MISSING = (
    "is missing: guard protects only explicit vectors (a server-side vectorizer would store an unprotected one)"
)


class GuardedWeaviateClient(_Guarded):
    """A Weaviate v4 client: ``collections.get/use/create`` and ``batch`` come back guarded."""

    _attrs: ClassVar[dict[str, str]] = {"collections": "weaviate_collections", "batch": "weaviate_batch_factory"}


class GuardedWeaviateCollections(_Guarded):
    _calls: ClassVar[dict[str, str]] = {
        name: "weaviate_collection" for name in ("get", "use", "create", "create_from_dict", "create_from_config")
    }


class GuardedWeaviateCollection(_Guarded):
    """A Weaviate collection: ``data``, ``batch`` and the vector queries are guarded."""

    _attrs: ClassVar[dict[str, str]] = {
        "data": "weaviate_data",
        "batch": "weaviate_batch_factory",
        "query": "weaviate_query",
        "generate": "weaviate_query",
        "aggregate": "weaviate_query",
    }
    _calls: ClassVar[dict[str, str]] = {
        "with_tenant": "weaviate_collection",
        "with_consistency_level": "weaviate_collection",
    }


def _weaviate_item(protector: Protector, record_id: str, vector: Any, properties: Any) -> Item:
    if vector is None:
        raise RecordError(record_id, "vector", _WEAVIATE_MISSING)
    if isinstance(vector, Mapping):
        dense = {_label(n): v for n, v in vector.items() if protector.wants(n)}
    elif _is_vector(vector):
        dense = {"vector": vector}
    else:
        raise _inference_error(record_id, "vector", vector)
    return Item(record_id, dense, payload=properties if isinstance(properties, Mapping) else None)


def _weaviate_protect(protector: Protector, record_id: str, vector: Any, properties: Any) -> Any:
    out = protector.protect([_weaviate_item(protector, record_id, vector, properties)], as_lists=True)[0]
    return vector if out is None else _rebuild(vector, out)


class GuardedWeaviateData(_Guarded):
    def insert(self, *args: Any, **kwargs: Any) -> Any:
        return _rebind(self._inner, "insert", args, kwargs, self._one)

    def replace(self, *args: Any, **kwargs: Any) -> Any:
        return _rebind(self._inner, "replace", args, kwargs, self._one)

    def update(self, *args: Any, **kwargs: Any) -> Any:
        def convert(a: dict[str, Any]) -> None:
            if a.get("vector") is not None:  # an update without a vector keeps the stored one
                self._one(a)

        return _rebind(self._inner, "update", args, kwargs, convert)

    def insert_many(self, *args: Any, **kwargs: Any) -> Any:
        return _rebind(self._inner, "insert_many", args, kwargs, lambda a: a.update(objects=self._many(a["objects"])))

    def ingest(self, *args: Any, **kwargs: Any) -> Any:
        return _rebind(self._inner, "ingest", args, kwargs, lambda a: a.update(objs=self._many(a["objs"])))

    def _one(self, a: dict[str, Any]) -> None:
        record_id = str(a["uuid"]) if a.get("uuid") is not None else "(no uuid)"
        a["vector"] = _weaviate_protect(self.protector, record_id, a.get("vector"), a.get("properties"))

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
            obj if p is None else _replace(obj, vector=_rebuild(obj.vector, p))
            for obj, p in zip(objects, out, strict=True)
        ]


class GuardedWeaviateBatchFactory(_Guarded):
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


class GuardedWeaviateBatchContext(_Guarded):
    def __enter__(self) -> Any:
        return GuardedWeaviateBatch(self._inner.__enter__(), self.protector)


class GuardedWeaviateBatch(_Guarded):
    """Each ``add_object`` is protected on its own; an object that cannot be is never queued."""

    def add_object(self, *args: Any, **kwargs: Any) -> Any:
        def convert(a: dict[str, Any]) -> None:
            record_id = str(a["uuid"]) if a.get("uuid") is not None else "(no uuid)"
            a["vector"] = _weaviate_protect(self.protector, record_id, a.get("vector"), a.get("properties"))

        return _rebind(self._inner, "add_object", args, kwargs, convert)


class GuardedWeaviateQuery(_Guarded):
    """``query``/``generate``/``aggregate``: near_vector and hybrid(vector=) get ``apply_query``
    when the transform changes the stored space; text- and media-based searches are then refused."""

    _TEXT_SEARCHES: ClassVar[frozenset[str]] = frozenset({"near_text", "near_image", "near_media"})

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not self.protector.changes_space or not callable(value):
            return value
        if name in self._TEXT_SEARCHES:
            hint = "the store is in the transform's space: embed the query yourself and use near_vector"
            return _Refused(f"Weaviate {name}", hint)
        if name == "near_vector":
            return functools.wraps(value)(lambda *a, **k: _rebind(self._inner, name, a, k, self._near_vector))
        if name == "hybrid":
            return functools.wraps(value)(lambda *a, **k: _rebind(self._inner, name, a, k, self._hybrid))
        return value

    def _transform(self, vector: Any) -> Any:
        if isinstance(vector, Mapping):
            return {n: self._transform(v) if self.protector.wants(n) else v for n, v in vector.items()}
        if not _is_vector(vector):
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


_WRAPPERS: dict[str, type[_Guarded]] = {
    "chroma_collection": GuardedChromaCollection,
    "pinecone_index": GuardedPineconeIndex,
    "weaviate_collections": GuardedWeaviateCollections,
    "weaviate_collection": GuardedWeaviateCollection,
    "weaviate_data": GuardedWeaviateData,
    "weaviate_batch_factory": GuardedWeaviateBatchFactory,
    "weaviate_query": GuardedWeaviateQuery,
}


def _wrapper_for(client: Any) -> type[_Guarded]:
    cls = type(client)
    package, name = cls.__module__.split(".")[0], cls.__name__
    has = lambda *attrs: all(hasattr(client, a) for a in attrs)  # noqa: E731
    if name.startswith("Async") or "asyncio" in cls.__module__:
        raise VdbguardError(f"async clients ({name}) are not supported by guard yet", "guard the sync client")
    if package == "qdrant_client" and has("upsert", "query_points"):
        return GuardedQdrant
    if package == "chromadb":
        if has("get_or_create_collection"):
            return GuardedChromaClient
        if has("add", "upsert", "query"):
            return GuardedChromaCollection
    if package == "pinecone":
        if has("Index"):
            return GuardedPinecone
        if has("upsert", "query"):
            return GuardedPineconeIndex
    if package == "weaviate":
        if has("collections"):
            return GuardedWeaviateClient
        if has("data", "batch", "query"):
            return GuardedWeaviateCollection
    raise VdbguardError(
        f"guard does not know how to protect a {cls.__module__}.{name}",
        "supported: QdrantClient, Chroma clients/collections, Pinecone clients/indexes, Weaviate v4 "
        "clients/collections; for LangChain or LlamaIndex wrap the embeddings (vdbguard.hooks.langchain/llamaindex)",
    )


def guard(
    client: Any,
    transform: Transform,
    *,
    policy: Policy | None = None,
    detector: Any = None,
    vector_names: Collection[str] | None = None,
) -> Any:
    """Wrap ``client`` so that every vector it writes goes through ``transform`` first.

    ``policy`` defaults to ``ProtectAll()``; ``detector=`` is short for ``policy=ProtectFlagged(detector)``.
    ``vector_names`` limits protection to those named vectors (default: every dense vector). The
    transform must already be fitted when it ``needs_fit``. The returned object delegates everything
    else to ``client``; its ``last_decisions`` are the policy's decisions for the last write call.
    """
    if isinstance(client, _Guarded):
        raise VdbguardError("this client is already guarded", "guard the original client once")
    wrapper = _wrapper_for(client)
    return wrapper(client, Protector(transform, resolve_policy(policy, detector), vector_names=vector_names))


def resolve_policy(policy: Policy | None, detector: Any) -> Policy | None:
    """``detector=d`` is short for ``policy=ProtectFlagged(d)``; giving both is ambiguous."""
    if detector is None:
        return policy
    if policy is not None:
        raise VdbguardError("pass either policy or detector, not both", "detector=d means policy=ProtectFlagged(d)")
    return ProtectFlagged(detector)
