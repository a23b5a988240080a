"""The engine-neutral core of every write-path hook: validate, decide, transform, validate again.

``Protector`` knows nothing of any store: client wrappers (``vdbguard.hooks.guard``), the framework
embedding wrappers and ``vdbguard.protect`` turn their records into ``Item``s and get protected vectors
back, or a ``RecordError`` naming the record and field before anything is written (fail closed).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vdbguard.errors import MissingExtraError, RecordError, VdbguardError
from vdbguard.hooks.policy import Candidate, Decision, Policy, ProtectAll, ProtectFlagged
from vdbguard.transforms.base import Transform, changes_space

__all__ = [
    "Item",
    "Protector",
    "changes_space",
    "has_vector_stage",
    "needs_extra",
    "redact_then_embed",
    "resolve_policy",
]

NUMBER_TYPES = (int, float, np.number)


@dataclass
class Item:
    """One record of a write call: its id, its dense vectors by field label, and what a policy reads."""

    record_id: str
    vectors: dict[str, Any]
    document: str | None = None
    payload: Mapping[str, Any] | None = field(default=None, repr=False)


def has_vector_stage(transform: Transform) -> bool:
    """Whether ``apply`` runs after embedding: always, except for a text-side transform with no vector
    parts (``redact`` alone; a chain such as ``redact+gaussian`` lists its ``vector_parts``)."""
    return not transform.text_side or bool(getattr(transform, "vector_parts", ()))


class Protector:
    """The engine-neutral core: validate, decide, transform, validate again, all before any write.

    ``on_text``: the caller hands over texts before they are embedded (the framework embedding
    wrappers, ``redact_then_embed``), which text-side transforms such as ``redact`` need.
    """

    def __init__(
        self,
        transform: Transform,
        policy: Policy | None = None,
        *,
        vector_names: Collection[str] | None = None,
        on_text: bool = False,
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
        if transform.text_side and not on_text:
            raise VdbguardError(
                f"transform {self.name!r} redacts text before it is embedded, and this hook only sees vectors",
                "wrap the embedding model instead (vdbguard.hooks.langchain.GuardedEmbeddings, "
                "vdbguard.hooks.llamaindex.GuardedEmbedding), or embed with "
                "vdbguard.hooks.redact_then_embed(texts, embed)",
            )
        if transform.text_side and self.policy.selective:
            raise VdbguardError(
                f"transform {self.name!r} redacts text, so a selective policy has nothing to choose: "
                "text without detected PII already reaches the embedder unchanged",
                "drop policy= / detector= (redaction decides per span; its types= and keep= say what is redacted)",
            )
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

    def protect_matrix(self, matrix: np.ndarray, record_ids: Sequence[str], label: str = "vector") -> np.ndarray:
        """Every row of one field protected at once, for a policy that protects everything: a client that takes
        numpy gets numpy back, with no per-record object on the way (the write path's cost is the transform's)."""
        if self.policy.selective:
            raise VdbguardError("protect_matrix protects every row; a selective policy goes through protect()")
        rows = _finite(np.asarray(matrix, dtype=np.float32), label, record_ids.__getitem__)
        self.policy.decide([Candidate(record_id) for record_id in record_ids])
        return self._apply(rows, [(record_id, 1) for record_id in record_ids], label)

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

    def model_texts(self, texts: Sequence[str]) -> list[str]:
        """What the embedding model may see of ``texts``: the transform's text stage (redaction) applied.

        Fails closed: a text the stage cannot handle raises a RecordError naming ``texts[i]`` before
        anything is embedded.
        """
        if not self.transform.text_side:
            return list(texts)
        try:
            out = self.transform.transform_texts(texts)
        except Exception as exc:
            failing = next((i for i, t in enumerate(texts) if _raises(self.transform.transform_texts, [t])), None)
            problem = f"{type(exc).__name__}: {exc}"
            if failing is None:
                raise VdbguardError(
                    f"transform {self.name!r} failed on a batch of {len(texts)} texts: {problem}"
                ) from exc
            raise RecordError(
                f"texts[{failing}]", "text", f"could not be redacted by transform {self.name!r}: {problem}"
            ) from exc
        if len(out) != len(texts) or not all(isinstance(t, str) for t in out):
            raise VdbguardError(
                f"transform {self.name!r} returned {len(out)} texts for {len(texts)}",
                "a text-side transform must return one string per input text",
            )
        return out

    def query_text(self, text: str) -> str:
        """The query as the embedding model may see it: redacted only if the transform's ``redact_queries`` says so."""
        if not (self.transform.text_side and getattr(self.transform, "redact_queries", False)):
            return text
        try:
            (out,) = self.transform.transform_texts([text])
        except Exception as exc:
            raise VdbguardError(
                f"transform {self.name!r} could not redact the query: {type(exc).__name__}: {exc}",
                "nothing was embedded; shorten or clean the query",
            ) from exc
        return out

    def embed_texts(
        self, texts: Sequence[str], embed: Callable[[list[str]], Sequence[Sequence[float]]], source: str
    ) -> list[list[float]]:
        """The whole write path for texts: text stage, ``embed`` (the model, named ``source``), vector stage."""
        return self.protect_texts(texts, embed(self.model_texts(texts)), source)

    def protect_texts(self, texts: Sequence[str], vectors: Sequence[Sequence[float]], source: str) -> list[list[float]]:
        """The embeddings a model (``source``) made of ``texts`` (after :meth:`model_texts`), protected as lists.

        The one text path of the LangChain and LlamaIndex wrappers: record ids are ``texts[i]``, the
        field is ``embedding``, and a vector that cannot be protected fails the whole batch.
        """
        if len(vectors) != len(texts):
            raise VdbguardError(f"{source} returned {len(vectors)} vectors for {len(texts)} texts")
        if not has_vector_stage(self.transform):
            self.policy.decide([Candidate(f"texts[{i}]", t) for i, t in enumerate(texts)])
            return [list(map(float, v)) for v in vectors]
        items = [
            Item(f"texts[{i}]", {"embedding": v}, document=t)
            for i, (t, v) in enumerate(zip(texts, vectors, strict=True))
        ]
        out = self.protect(items, as_lists=True)
        return [list(map(float, v)) if o is None else o["embedding"] for v, o in zip(vectors, out, strict=True)]

    def query_list(self, vector: Sequence[float]) -> list[float]:
        """A framework's query embedding moved into the stored space (as is when the transform keeps it)."""
        if not self.changes_space:
            return list(map(float, vector))
        return self.query(vector).tolist()

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
    return _finite(matrix, label, lambda row: items[members[row]].record_id)


def _finite(matrix: np.ndarray, label: str, record_id: Callable[[int], str]) -> np.ndarray:
    """``matrix``, or a RecordError naming the record of its first row that holds NaN or an infinity."""
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        raise RecordError(record_id(int(np.flatnonzero(~finite)[0])), label, "contains NaN or infinite values")
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


def is_vector(value: Any) -> bool:
    """A dense vector or multi-vector given as numbers (not an id, a sparse vector or an inference object)."""
    if isinstance(value, np.ndarray):
        return True
    if isinstance(value, (list, tuple)):
        return not value or isinstance(value[0], (*NUMBER_TYPES, list, tuple, np.ndarray))
    return False


def vector_label(name: str | None, base: str = "vector") -> str:
    """An item's field label for a vector: ``vector``, or ``vector['name']`` for a named one."""
    return base if name is None else f"{base}[{name!r}]"


def resolve_policy(policy: Policy | None, detector: Any) -> Policy | None:
    """``detector=d`` is short for ``policy=ProtectFlagged(d)``; giving both is ambiguous."""
    if detector is None:
        return policy
    if policy is not None:
        raise VdbguardError("pass either policy or detector, not both", "detector=d means policy=ProtectFlagged(d)")
    return ProtectFlagged(detector)


@contextmanager
def needs_extra(module: str, extra: str) -> Iterator[None]:
    """Imports in the block that fail mean ``module`` lacks its optional ``extra``: say which to install."""
    try:
        yield
    except ImportError as exc:
        raise MissingExtraError(module, extra) from exc


def redact_then_embed(
    texts: Sequence[str], embed: Callable[[list[str]], Any], transform: Transform | None = None
) -> list[list[float]]:
    """``embed(texts)`` for a pipeline that embeds itself, but ``embed`` only ever sees redacted text.

    ``transform`` defaults to ``TextRedaction()``; pass one built once to reuse it (and for a chain
    such as ``redact+gaussian`` its vector stage runs too). Fails closed: a text that cannot be
    redacted raises a RecordError naming ``texts[i]`` and nothing is embedded.
    """
    if transform is None:
        from vdbguard.transforms.redaction import TextRedaction

        transform = TextRedaction()
    protector = Protector(transform, on_text=True)
    return protector.embed_texts(texts, embed, "embed")
