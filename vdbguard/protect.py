"""Copy an existing collection through a transform into a new one: protection for data already stored.

Hooks protect what is written from now on; ``protect_collection`` rewrites what is already there.
It streams the source page by page (``Connector.iter_batches``), transforms every vector with the
same fail-closed core the hooks use, and upserts into the target, which is created with the
transform's output dimension (dimension reduction changes it, e.g. PCA, a defense studied by Morris
et al., EMNLP 2023 and Song & Raghunathan, CCS 2020).

Resumable: after each batch the source cursor and the counts are written to ``state_path`` in one
atomic replace, so a run killed at any point continues after the last finished batch, and a rerun of a
finished one (the state says done) reads and writes nothing. A batch written but not yet recorded is read
again on resume, and no record is transformed twice, in place or not, because each record written carries a
protection mark in its payload, in the same write as its vector: ``MARK_KEY`` (``vdbguard_protected``), a
JSON list ``[{"transform": name, "digest": 16 hex digits}]``, oldest first, the digest covering what defines
the transform's output (settings without the seed, the key's one-way tag, the fit's arrays, a text-side
transform's model). A record that already carries this run's mark is not transformed again, with or without
the state (a lost state, a job run twice): in place it is left as it is, a copy takes it as it is, and both
count it (``ProtectResult.already_protected``). In place, a record another transform or other settings marked
is refused, naming it, by a read pass before anything is written: a second protection stacked on the first
cannot be undone in place. A copy layers them instead (the mark lists both) and leaves the source as it was. A
store with nowhere to keep the mark (a table without a payload column for it) is refused at the first write.

A transform that needs fitting is fitted on a seeded reservoir sample of the source (one extra read
pass) and the fit is saved (``fit_path``, else beside the state file) so a resumed run applies exactly
the same map instead of refitting, which in place would fit on half-protected vectors. Its identity
(its outputs on fixed probe vectors, where they are deterministic) is kept in the state, and a resume
whose transform differs (another key, another fit) is refused: a target half in one space and half in
another would silently break retrieval. A resume with a *seeded*
random transform (noise) is refused too: it would replay the noise of the first batches, and two
records carrying the same noise leak their exact difference. Resume those with ``seed=None``.

A text-side transform (``redact``, or a chain that starts with it) cannot change a vector already made: it
reads each record's stored text, redacts it, and embeds the redacted text again with ``embed`` (the
collection's model), then runs the chain's vector stages. The stored text itself is redacted too by default
(``stored_text="redact"``: the document and every string of the payload), or kept, or dropped. A record with no
stored text is skipped and named, never copied with its old vector; a collection that keeps no text is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, get_args

import numpy as np

from vdbguard.config import StoredText
from vdbguard.connectors.base import Connector
from vdbguard.embedders import SAME_TEXT
from vdbguard.errors import RecordError, VdbguardError
from vdbguard.hooks.protector import Item, Protector, vector_label
from vdbguard.progress import Advance, ProgressSink
from vdbguard.records import PROTECTION_MARK_KEY, TEXT_PAYLOAD_KEYS, Batch, VectorRecord
from vdbguard.reports.schema import Report, Severity
from vdbguard.transforms.base import Transform
from vdbguard.transforms.fitting import can_save_fit, load_fit, save_fit

if TYPE_CHECKING:
    from vdbguard.config import ProtectJob, StoreSettings

__all__ = ["MARK_KEY", "ProtectResult", "leak_counts", "protect_collection"]

STATE_VERSION = 1
MARK_KEY = PROTECTION_MARK_KEY  # the payload key each written record's protection mark goes under
_MAX_PROBLEMS = 100
_PROBE_ROWS = 2

FitLabels = Callable[[Sequence[VectorRecord]], np.ndarray]
Embed = Callable[[list[str]], Any]  # texts -> their vectors, the collection's model (any callable: API models too)
STORED_TEXT_MODES: tuple[str, ...] = get_args(StoredText)


@dataclass(frozen=True)
class ProtectResult:
    copied: int  # records transformed and written to the target (over all runs of a resumed copy)
    skipped: int  # records without a usable vector (missing, NaN, wrong shape); see ``problems``
    dimension: int | None = None  # the target's vector dimension
    resumed: bool = False
    problems: tuple[str, ...] = ()  # the first skipped records and why
    # records that already carried this transform's mark: not transformed again (in place left as they were,
    # a copy takes them as they are)
    already_protected: int = 0
    done_before: bool = False  # the state said this copy had finished: nothing was read or written

    def summary(self, transform: str, to_collection: str) -> str:
        """One line for the user: what was written, and what was left because it was protected before."""
        copied = f"{self.copied} records through {transform} to {to_collection}"
        if self.done_before:
            return f"nothing to do: the state says this protection finished before (copied {copied}); nothing changed"
        line = f"copied {copied}"
        if self.already_protected:
            line += (
                f"; {self.already_protected} records already carried its mark ({MARK_KEY}) and were not transformed "
                "again"
            )
        return line


def protect_collection(
    source: Connector,
    target: Connector,
    transform: Transform,
    *,
    batch_size: int = 256,
    state_path: str | Path | None = None,
    progress: Advance | None = None,
    fit_sample: int = 2000,
    in_place: bool = False,
    fit_labels: FitLabels | None = None,
    fit_on: tuple[np.ndarray, np.ndarray] | None = None,
    seed: int = 0,
    fit_path: str | Path | None = None,
    embed: Embed | None = None,
    embedder_name: str | None = None,
    stored_text: StoredText = "redact",
) -> ProtectResult:
    """Copy ``source`` into ``target`` with every dense vector replaced by ``transform.apply`` of it.

    Ids, payloads, text and namespaces are kept; each record written gains its protection mark (``MARK_KEY``), and
    a record that carries this transform's mark is not transformed again (module docstring). ``target`` is created
    (``ensure_collection``) with the source's metric and vector names and the transform's output dimension. Writing
    into the source itself (``target is source``, or the same store and collection) is refused unless
    ``in_place=True``: it overwrites the original vectors irreversibly. ``fit_labels`` gives concept labels for the fit
    sample (transforms such as LEACE use them); ``fit_on`` = (vectors, labels) fits on those instead of the
    source, e.g. ``vdbguard.transforms.concepts.corpus_concept_set(embedder, "PERSON")``. ``fit_path``: a saved
    fit (``vdbguard.transforms.fitting``) to load instead of fitting, or where to save the fit when it does not
    exist yet; without it the fit is kept beside ``state_path`` (``<state>.fit.npz``) and reused on resume.
    Records without a usable vector are skipped and counted; a transform failure stops the run with a
    RecordError naming the record (resume after fixing it). A text-side transform needs ``embed`` (the
    collection's model, ``embedder_name`` naming it for the state) and applies ``stored_text`` to what is stored.
    """
    if batch_size < 1:
        raise VdbguardError(f"batch_size must be at least 1, got {batch_size}")
    same = target is source or (_identity(source) is not None and _identity(source) == _identity(target))
    if same and not in_place:
        raise VdbguardError(
            "the target is the source collection: protecting in place overwrites the original vectors irreversibly",
            "write to a new collection, or pass in_place=True if that is what you want",
        )
    if stored_text not in STORED_TEXT_MODES:
        raise VdbguardError(f"unknown stored_text {stored_text!r}", f"use one of {', '.join(STORED_TEXT_MODES)}")
    text_side = bool(getattr(transform, "text_side", False))
    if text_side and embed is None:
        raise VdbguardError(
            f"transform {transform.name!r} redacts the stored text and embeds it again: it needs the collection's "
            "embedding model",
            "pass --embedder (a packaged model or a local sentence-transformers folder); from Python, embed=",
        )
    if text_side and transform.needs_fit:
        raise VdbguardError(
            f"{transform.name!r} fits its vector stage, which a copy that re-embeds text does not support yet",
            "protect with redact alone (or redact+gaussian), then run the fitted transform on the copy",
        )
    state_file = Path(state_path) if state_path is not None else None
    state = _load_state(state_file)
    key = {
        "source": _identity(source) or repr(source),
        "target": _identity(target) or repr(target),
        "transform": str(getattr(transform, "name", type(transform).__name__)),
        # the seed is left out: it does not define the stored space (the transform identity checks what does)
        "params": _jsonable({k: v for k, v in transform.params().items() if k != "seed"}),
    }
    if text_side:
        key |= {"embedder": embedder_name or repr(embed), "stored_text": stored_text}
    if state is not None:
        mismatch = [k for k, v in key.items() if state.get(k) != v]
        if mismatch:
            raise VdbguardError(
                f"the state file {state_file} belongs to another copy (different {', '.join(mismatch)})",
                "use the same source, target and transform to resume, or delete the state file to start over",
            )
        if state.get("done"):
            return _result(state, resumed=True, done_before=True)

    info = source.describe()
    if text_side:
        _refuse_without_text(source, batch_size)
        transform.expect(int(info.count or 0))
    dimension = info.dimension or _first_dimension(source, batch_size)
    if dimension is None:  # nothing with a vector to copy
        return ProtectResult(copied=0, skipped=int(info.count), dimension=None)
    if text_side:
        assert embed is not None
        dimension = int(np.asarray(embed(["dimension"]), dtype=np.float32).shape[1])  # what the copy's vectors hold
    save_to = None  # where a fit made now is kept, once it has passed the resume checks
    if transform.needs_fit:
        fit_file = _fit_file(fit_path, state_file, transform)
        # a fit beside the state is reused only to resume: a fresh start (state deleted) fits anew
        if fit_file is not None and fit_file.exists() and (fit_path is not None or state is not None):
            load_fit(transform, fit_file, dimension)
        else:
            if fit_on is not None:
                transform.fit(*fit_on)
            else:
                _fit(source, transform, batch_size, fit_sample, fit_labels, seed)
            save_to = fit_file
    identity, out_dim = _transform_identity(vector_stage(transform), dimension)
    if state is None:
        state = {**key, "version": STATE_VERSION, "cursor": None, "copied": 0, "skipped": 0, "problems": []}
        state["already"] = 0
        state["fingerprint"], state["dimension"], state["done"] = identity, out_dim, False
        resumed = False
    else:
        if not _same_transform_identity(state.get("fingerprint"), identity):
            raise VdbguardError(
                "the transform differs from the one the interrupted copy used (another key, seed or fit)",
                "resume with the same key, seed and saved fit (fit_path, or the .fit.npz beside the state file), or "
                "delete the state file and the target and start over",
            )
        if "apply" not in identity and transform.seed is not None:
            raise VdbguardError(
                f"transform {key['transform']!r} draws random noise from seed {transform.seed}: a resumed run would "
                "draw the same noise as the first batches again, and noise shared between records cancels out",
                "resume with seed=None (fresh randomness)",
            )
        resumed = True
    if save_to is not None:
        save_fit(transform, save_to)
    mark = _mark(transform, key, embedder_name if text_side else None)
    if same:
        _refuse_foreign_marks(source, batch_size, mark)
    target.ensure_collection(out_dim, info.metric or "cosine", info.vector_names)

    protector = None if text_side else Protector(transform)
    embedding = _ReEmbedding(embed) if embed is not None else None
    seen: set[str] | None = set() if same else None  # in place: a moved row must not be transformed twice
    for batch in _batches(source, batch_size, state["cursor"], reopen=target is source):
        records = batch.records
        if seen is not None:
            records = [r for r in records if r.id not in seen]
            seen.update(r.id for r in records)
        fresh, marked, marks = _split_marked(records, mark, in_place=same)
        protected: list[VectorRecord] = []
        problems: list[str] = []
        if fresh and text_side:
            assert embedding is not None
            protected, problems = _protect_text_batch(transform, embedding, fresh, stored_text)
        elif fresh:
            assert protector is not None
            protected, problems = _protect_batch(protector, fresh)
        for record in protected:  # the mark travels with the vector, in the same write
            record.payload[MARK_KEY] = marks[record.id]
        written = protected if same else protected + marked  # a copy takes what was protected before as it is
        if written:
            _write(target, written)
        state["cursor"] = batch.cursor
        state["copied"] += len(protected)
        state["already"] = state.get("already", 0) + len(marked)
        state["skipped"] += len(problems)
        state["problems"] = (state["problems"] + problems)[:_MAX_PROBLEMS]
        if state_file is not None:
            _save_state(state_file, state)
        if progress is not None:
            progress(len(batch.records))
    seen_total = state["copied"] + state["skipped"] + state.get("already", 0)
    if same and seen_total != info.count:
        raise VdbguardError(
            f"the in-place rewrite saw {seen_total} of {info.count} records: the store's order changed while it "
            "was rewritten, so some records may still hold unprotected vectors",
            "protect into a new collection instead (the default), then swap collections",
        )
    state["done"] = True
    if state_file is not None:
        _save_state(state_file, state)
    return _result(state, resumed=resumed)


def _batches(source: Connector, batch_size: int, cursor: str | None, *, reopen: bool) -> Iterator[Batch]:
    """The source's pages from ``cursor`` on. Writing through the connector being read ends its read
    session (connectors drop their snapshot on upsert), so in place each page is read afresh from the
    last cursor: slower (a new snapshot per page), but never a page read from a closed session."""
    if not reopen:
        yield from source.iter_batches(batch_size=batch_size, resume_from=cursor)
        return
    while True:
        pages = source.iter_batches(batch_size=batch_size, resume_from=cursor)
        batch = next(pages, None)
        close = getattr(pages, "close", None)
        if close is not None:
            close()
        if batch is None:
            return
        yield batch
        if batch.cursor is None or batch.cursor == cursor:
            return
        cursor = batch.cursor


def _protect_batch(protector: Protector, records: Sequence[VectorRecord]) -> tuple[list[VectorRecord], list[str]]:
    """The batch with protected vectors, and the records skipped for want of a usable vector."""
    usable, items, problems = [], [], []
    for record in records:
        try:
            record.checked_vector()
        except RecordError as exc:
            problems.append(str(exc))
            continue
        if record.named_vectors:
            vectors = {vector_label(name): vector for name, vector in record.named_vectors.items()}
        else:
            vectors = {"vector": record.vector}
        usable.append(record)
        items.append(Item(record.id, vectors, document=record.text, payload=record.payload))
    out = protector.protect(items)  # raises a RecordError naming the record if the transform fails
    protected = []
    for record, new in zip(usable, out, strict=True):
        assert new is not None  # ProtectAll
        named = {}
        vector = new.get("vector")
        for name, original in record.named_vectors.items():
            named[name] = new[vector_label(name)]
            if vector is None and np.array_equal(original, record.vector):
                vector = named[name]  # the primary vector is one of the named ones: the same protected value
        if vector is None:
            raise RecordError(record.id, "vector", "is not one of the record's named vectors")
        protected.append(
            VectorRecord(
                id=record.id,
                vector=vector,
                payload=dict(record.payload),
                text=record.text,
                namespace=record.namespace,
                named_vectors=named,
            )
        )
    return protected, problems


def _mark(transform: Transform, key: dict[str, Any], embedder_name: str | None) -> dict[str, str]:
    """This run's protection mark: the transform's name and a digest of what defines its output (its settings
    without the seed, which only draws noise, its key's one-way tag, its fit's arrays, a text-side one's model
    when named: an unnamed callable's repr would differ from process to process)."""
    identity = {
        "transform": key["transform"],
        "params": _seedless(key["params"]),
        "embedder": embedder_name,
        "fit": _fit_digest(transform),
    }
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    return {"transform": key["transform"], "digest": digest}


def _seedless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _seedless(v) for k, v in value.items() if k != "seed"}  # a chain's parts have seeds too
    return [_seedless(v) for v in value] if isinstance(value, list) else value


def _fit_digest(transform: Transform) -> str | None:
    """The fit's arrays (what ``save_fit`` writes, and a loaded fit gives back bit for bit), hashed."""
    state = transform.fit_state() if transform.needs_fit else {}
    if not state:
        return None
    digest = hashlib.sha256()
    for name in sorted(state):
        array = np.ascontiguousarray(state[name])
        digest.update(f"{name}:{array.dtype.str}:{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def _marks_of(record: VectorRecord) -> list[dict[str, Any]]:
    """The protections a record's payload says it went through, oldest first ([] when it carries no mark)."""
    value = record.payload.get(MARK_KEY)
    if value is None:
        return []
    try:
        marks = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        marks = None
    if not isinstance(marks, list) or not all(
        isinstance(m, dict) and isinstance(m.get("transform"), str) and isinstance(m.get("digest"), str) for m in marks
    ):
        raise RecordError(
            record.id,
            f"payload.{MARK_KEY}",
            'is not a vdbguard protection mark (a JSON list of {"transform", "digest"}): vdbguard reserves that key',
        )
    return marks


def _carries(marks: Sequence[dict[str, Any]], mark: dict[str, str]) -> bool:
    return any(m["digest"] == mark["digest"] for m in marks)


def _split_marked(
    records: Sequence[VectorRecord], mark: dict[str, str], *, in_place: bool
) -> tuple[list[VectorRecord], list[VectorRecord], dict[str, str]]:
    """The records to transform, those that already carry ``mark`` (never transformed twice), and the mark value
    each record to transform gets: the marks it had (a copy layers transforms) with this one after them."""
    fresh, marked, values = [], [], {}
    for record in records:
        marks = _marks_of(record)
        if _carries(marks, mark):
            marked.append(record)
            continue
        if in_place and marks:  # written since the check before the first write
            raise _foreign_mark_error(record, marks, mark, 0)
        fresh.append(record)
        values[record.id] = json.dumps([*marks, mark], separators=(",", ":"))
    return fresh, marked, values


def _refuse_foreign_marks(source: Connector, batch_size: int, mark: dict[str, str]) -> None:
    """In place, before anything is written: a record another transform (or other settings) protected would
    carry two protections after this run, and a run refused half way would leave a collection of both."""
    first: tuple[VectorRecord, list[dict[str, Any]]] | None = None
    others = 0
    for batch in source.iter_batches(batch_size=batch_size):
        for record in batch.records:
            marks = _marks_of(record)
            if marks and not _carries(marks, mark):
                if first is None:
                    first = (record, marks)
                else:
                    others += 1
    if first is not None:
        raise _foreign_mark_error(*first, mark, others)


def _foreign_mark_error(
    record: VectorRecord, marks: Sequence[dict[str, Any]], mark: dict[str, str], others: int
) -> VdbguardError:
    names = "+".join(m["transform"] for m in marks)
    by = f"{names} with other settings (another strength, key, fit or model)" if names == mark["transform"] else names
    more = f" (and {others} more records)" if others else ""
    return VdbguardError(
        f"record {record.id!r}{more}: field 'payload.{MARK_KEY}' says {by} protected it already: {mark['transform']} "
        "in place would put a second protection over the first",
        "finish with the transform and settings that made the mark (the same strength, key and --fit-file), or "
        "protect into a new collection, which layers transforms and leaves the source as it is",
    )


def _write(target: Connector, records: list[VectorRecord]) -> None:
    try:
        target.upsert(records)
    except RecordError as exc:
        if exc.field != "payload" or MARK_KEY not in exc.problem:
            raise
        raise VdbguardError(
            f"{exc.message}: each record protect writes keeps its protection mark in the payload key {MARK_KEY!r} "
            "(what stops a second run from transforming it again), and this collection has nowhere to keep it",
            f"give the table a JSON payload column or a text column named {MARK_KEY}, or protect into a new "
            "collection (vdbguard creates it with a payload column)",
        ) from exc


def vector_stage(transform: Transform) -> Transform | None:
    """What a transform does to a vector: itself, a text-side chain's vector parts, or nothing (``redact``)."""
    from vdbguard.transforms.chain import Chain

    if not getattr(transform, "text_side", False):
        return transform
    return transform if isinstance(transform, Chain) and transform.vector_parts else None


def _refuse_without_text(source: Connector, batch_size: int) -> None:
    for batch in source.iter_batches(batch_size=batch_size):
        if any(record.source_text is not None for record in batch.records):
            return
        break
    raise VdbguardError(
        f"collection {getattr(source, 'collection_name', '')!r} keeps no text beside its vectors: redaction embeds "
        "each record's redacted text again, so it needs that text (a document, or a payload field "
        "text/document/content/page_content/body)",
        "protect the vectors with a vector transform instead (e.g. --transform gaussian; docs/defenses.md, "
        "'Which defense'), or re-ingest from the source documents through redact_then_embed",
    )


@dataclass
class _ReEmbedding:
    """The collection's model, embedding redacted texts again. A text that redaction left as it was keeps its stored
    vector once the model has shown on the first such records (``PROBE_RECORDS``) that it makes exactly the stored
    vectors: the same vector, without the model's time (most records of most stores hold no PII). A model that does
    not (another model, other preprocessing) embeds every text again, so the copy is one space."""

    embed: Embed
    reuses: bool | None = None  # None: not shown yet

    PROBE_RECORDS: ClassVar[int] = 16

    def vectors(self, records: Sequence[VectorRecord], texts: Sequence[str], redacted: Sequence[str]) -> np.ndarray:
        kept = [i for i, (text, new) in enumerate(zip(texts, redacted, strict=True)) if text == new]
        if self.reuses is None and kept:
            probe = kept[: self.PROBE_RECORDS]
            made = np.asarray(self.embed([texts[i] for i in probe]), dtype=np.float32)
            self.reuses = all(_same_vector(made[row], records[i].vector) for row, i in enumerate(probe))
        kept = kept if self.reuses else []
        again = [i for i in range(len(texts)) if i not in set(kept)]
        made = np.asarray(self.embed([redacted[i] for i in again]), dtype=np.float32) if again else None
        out = np.empty((len(texts), made.shape[1] if made is not None else len(records[kept[0]].vector)), np.float32)
        for i in kept:
            out[i] = records[i].vector
        if made is not None:
            out[again] = made
        return out


def _same_vector(made: np.ndarray, stored: Any) -> bool:
    """Whether a stored vector is the model's own for its text: the same direction and length, up to batch padding."""
    vector = np.asarray(stored, dtype=np.float32)
    if vector.shape != made.shape:
        return False
    norms = float(np.linalg.norm(vector)), float(np.linalg.norm(made))
    cosine = float(made @ vector) / max(norms[0] * norms[1], 1e-12)
    return cosine >= SAME_TEXT and abs(norms[0] - norms[1]) <= 0.01 * norms[1]


def _protect_text_batch(
    transform: Transform, embedding: _ReEmbedding, records: Sequence[VectorRecord], stored_text: StoredText
) -> tuple[list[VectorRecord], list[str]]:
    """Each record with text: its text redacted and embedded again, through the chain's vector stages; the
    stored text redacted, kept or dropped. A record without text is skipped and named, never copied as it was."""
    usable, problems = [], []
    for record in records:
        if record.source_text is None:
            problems.append(f"record {record.id!r}: no stored text to redact and embed again: not copied")
        elif record.named_vectors:
            problems.append(f"record {record.id!r}: several named vectors; redaction re-embeds one text: not copied")
        else:
            usable.append(record)
    if not usable:
        return [], problems
    try:
        texts = [record.source_text or "" for record in usable]
        payloads = (
            [v for r in usable for k, v in r.payload.items() if _redactable(k, v)] if stored_text == "redact" else []
        )
        unique = list(dict.fromkeys([*texts, *payloads]))  # one detector pass for the page, each string once
        redacted_of = dict(zip(unique, transform.transform_texts(unique), strict=True))
        redacted = [redacted_of[text] for text in texts]
        vectors = embedding.vectors(usable, texts, redacted)
        stage = vector_stage(transform)
        vectors = vectors if stage is None else stage.apply(vectors)
    except VdbguardError:
        raise
    except Exception as exc:  # fail closed: nothing of this batch is written
        raise RecordError(usable[0].id, "text", f"could not be redacted and embedded: {type(exc).__name__}") from exc
    protected = []
    for record, text, vector in zip(usable, redacted, vectors, strict=True):
        payload, stored = dict(record.payload), record.text
        if stored_text == "redact":
            payload |= {k: redacted_of[v] for k, v in payload.items() if _redactable(k, v)}
            stored = text if record.text is not None else None
        elif stored_text == "drop":
            payload = {k: v for k, v in payload.items() if k not in TEXT_PAYLOAD_KEYS}
            stored = None
        protected.append(
            VectorRecord(id=record.id, vector=vector, payload=payload, text=stored, namespace=record.namespace)
        )
    return protected, problems


def _redactable(key: str, value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip()) and key != MARK_KEY  # the mark is ours


def _fit(
    source: Connector,
    transform: Transform,
    batch_size: int,
    fit_sample: int,
    fit_labels: FitLabels | None,
    seed: int,
) -> None:
    """Fit on a uniform sample (reservoir sampling, Vitter 1985) of the source's usable vectors."""
    rng = np.random.default_rng(seed)
    sample: list[VectorRecord] = []
    seen = 0
    for batch in source.iter_batches(batch_size=batch_size):
        for record in batch.records:
            try:
                record.checked_vector()
            except RecordError:
                continue
            seen += 1
            if len(sample) < fit_sample:
                sample.append(record)
            else:
                j = int(rng.integers(seen))
                if j < fit_sample:
                    sample[j] = record
    if not sample:
        raise VdbguardError(f"transform {transform.name!r} needs fitting but the source has no usable vectors")
    vectors = np.stack([r.checked_vector() for r in sample])
    labels = fit_labels(sample) if fit_labels is not None else None
    try:
        transform.fit(vectors, labels)
    except VdbguardError:
        raise
    except Exception as exc:
        raise VdbguardError(
            f"fitting transform {transform.name!r} on {len(sample)} vectors failed: {type(exc).__name__}: {exc}"
        ) from exc


def _fit_file(fit_path: str | Path | None, state_file: Path | None, transform: Transform) -> Path | None:
    """Where the fit is kept: ``fit_path``, else beside the state file when the transform can save its fit."""
    if fit_path is not None:
        return Path(fit_path)
    if state_file is None or not can_save_fit(transform):
        return None
    return state_file.with_name(state_file.name + ".fit.npz")


def _first_dimension(source: Connector, batch_size: int) -> int | None:
    for batch in source.iter_batches(batch_size=batch_size):
        for record in batch.records:
            if record.vector is not None:
                return int(np.asarray(record.vector).size)
    return None


def _transform_identity(transform: Transform | None, dimension: int) -> tuple[dict[str, Any], int]:
    """What identifies a transform's fitted parameters and key: its outputs on fixed probe vectors, kept
    where deterministic (state key ``fingerprint``), and the transform's output dimension. No vector stage
    (``redact`` alone): nothing to identify beyond the state's key."""
    if transform is None:
        return {}, dimension
    probe = np.random.default_rng(20240611).standard_normal((_PROBE_ROWS, dimension)).astype(np.float32)
    probe /= np.linalg.norm(probe, axis=1, keepdims=True)
    applied = np.asarray(transform.apply(probe), dtype=np.float32)
    if applied.ndim != 2 or applied.shape[0] != _PROBE_ROWS:
        raise VdbguardError(f"transform {transform.name!r} returned shape {applied.shape} for {_PROBE_ROWS} vectors")
    identity: dict[str, Any] = {}
    for name, fn, first in (("apply", transform.apply, applied), ("apply_query", transform.apply_query, None)):
        a = np.asarray(fn(probe), dtype=np.float32) if first is None else first
        b = np.asarray(fn(probe), dtype=np.float32)
        if a.shape == b.shape and np.array_equal(a, b):  # a random transform draws anew each call: not comparable
            identity[name] = np.round(a, 6).tolist()
    return identity, int(applied.shape[1])


def _same_transform_identity(saved: Any, current: dict[str, Any]) -> bool:
    if not isinstance(saved, dict) or set(saved) != set(current):
        return False
    for name, values in current.items():
        a, b = np.asarray(saved[name], dtype=np.float32), np.asarray(values, dtype=np.float32)
        if a.shape != b.shape or not np.allclose(a, b, atol=1e-4):
            return False
    return True


def _identity(connector: Connector) -> str | None:
    """Which store and collection a connector points at, for spotting in-place runs and stale states."""
    location = getattr(connector, "location", None)
    collection = getattr(connector, "collection_name", None)
    if location is None or collection is None:
        return None
    return f"{connector.name}:{location}#{collection}"


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str, sort_keys=True))


def _load_state(path: Path | None) -> dict[str, Any] | None:
    if path is None or not path.exists():
        return None
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise VdbguardError(f"cannot read the protect state file {path}: {exc}", "delete it to start over") from exc
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
        raise VdbguardError(f"{path} is not a vdbguard protect state file", "delete it to start over")
    return state


def _save_state(path: Path, state: dict[str, Any]) -> None:
    """Write-then-rename in the same directory, so a crash leaves the old state or the new, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(state, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _result(state: dict[str, Any], *, resumed: bool, done_before: bool = False) -> ProtectResult:
    return ProtectResult(
        copied=int(state["copied"]),
        skipped=int(state["skipped"]),
        dimension=state.get("dimension"),
        resumed=resumed,
        problems=tuple(state.get("problems", ())),
        already_protected=int(state.get("already", 0)),  # a state an earlier vdbguard wrote has none
        done_before=done_before,
    )


def leak_counts(report: Report, at_least: Severity = Severity.LOW) -> Counter[tuple[str, str]]:
    """Records flagged by finding kind and PII type, counting findings at least ``at_least`` severe."""
    return Counter(
        (finding.kind, t)
        for finding in report.iter_findings()
        if finding.severity.rank >= at_least.rank
        for t in finding.pii_types
    )


@dataclass
class ProtectRun:
    """What `vdbguard protect` did: the copy, and the default scans of the source before and the copy after (None
    when ``ProtectJob.scan`` is off)."""

    result: ProtectResult
    transform: Transform
    before: Report | None
    after: Report | None


def run_protect(store: StoreSettings, collection: str, job: ProtectJob, progress: ProgressSink) -> ProtectRun:
    """`vdbguard protect`: ``collection`` of ``store`` copied through ``job.transform`` into ``job.to_collection``
    (itself only with ``in_place``), a text-side transform re-embedding with ``job.embedder``, a concept transform
    learning ``job.concept`` from vdbguard's corpus, each side scanned as a default `scan` would."""
    from vdbguard.embedders import Embedder
    from vdbguard.transforms.chain import build_transform
    from vdbguard.transforms.concepts import corpus_concept_set

    if (job.to_collection == collection) != job.in_place:
        raise VdbguardError(
            "writing over the source collection needs in_place (--in-place --yes), and only then",
            "name another collection to copy into, or confirm writing in place",
        )
    transform = build_transform(job.transform, job.strength)
    fit_needed = transform.needs_labels and not (job.fit_file is not None and job.fit_file.exists())  # a saved fit
    model = Embedder(job.embedder) if transform.text_side or fit_needed else None  # 'auto' and 'store' scan only
    fit_on = None
    if model is not None and fit_needed:
        with progress.task(f"Learning where {job.concept} lives in {job.embedder}'s vectors", None):
            fit_on = corpus_concept_set(model, job.concept)
    out = job.out
    before = _default_scan(store, collection, job.embedder, out and out / "before", progress) if job.scan else None
    source = store.open(collection)
    target = source if job.in_place else store.open(job.to_collection)
    with (
        source,
        target,
        progress.task(f"Protecting {collection} -> {job.to_collection}", source.describe().count) as advance,
    ):
        result = protect_collection(
            source,
            target,
            transform,
            batch_size=job.batch_size,
            state_path=job.state,
            progress=advance,
            in_place=job.in_place,
            fit_on=fit_on,
            fit_path=job.fit_file,
            embed=model.encode if model is not None and transform.text_side else None,
            embedder_name=model.name if model is not None and transform.text_side else None,
            stored_text=job.stored_text,
        )
    after = _default_scan(store, job.to_collection, job.embedder, out and out / "after", progress) if job.scan else None
    return ProtectRun(result, transform, before, after)


def _default_scan(
    store: StoreSettings, collection: str, embedder: str, out: Path | None, progress: ProgressSink
) -> Report:
    """A default scan of one collection of the store, the job `scan` runs for it, its reports into ``out`` (none
    kept without)."""
    from vdbguard.config import JobConfig, JobSettings, OutputSettings
    from vdbguard.scan.job import CollectionFailure, run_job

    with contextlib.ExitStack() as stack:
        folder = out or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="vdbguard-protect-")))
        config = JobConfig(
            job=JobSettings(embedder=embedder),
            stores=[store.model_copy(update={"collections": [collection]})],
            output=OutputSettings(dir=folder),
        )
        (result,) = run_job(config, progress=progress, folders="none")  # run to its end: it stops its workers
    if isinstance(result, CollectionFailure):
        error = result.error
        error.hint = f"{error.hint}; or protect with --no-scan" if error.hint else "protect with --no-scan"
        raise error
    return result.report


def before_and_after(before: Report, after: Report, fail_on: str) -> tuple[Severity, list[tuple[str, ...]], int]:
    """Records flagged per kind and type before and after, all of them and those at least as severe as ``fail_on``
    (medium with "never"): that severity, the rows, and the findings after at least that severe."""
    at_least = Severity.MEDIUM if fail_on == "never" else Severity(fail_on)
    counts = [leak_counts(before), leak_counts(after), leak_counts(before, at_least), leak_counts(after, at_least)]
    keys = sorted(set(counts[0]) | set(counts[1]))
    rows = [(f"{kind}: {pii_type}", *(str(count[(kind, pii_type)]) for count in counts)) for kind, pii_type in keys]
    return at_least, rows, sum(1 for finding in after.iter_findings() if finding.severity.rank >= at_least.rank)
