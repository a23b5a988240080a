"""Concept labels for the transforms that learn where a concept lives in the vectors (``leace``, ``sparse``).

Both fit on labelled vectors. A user without labels of their own fits them on vdbguard's synthetic
corpus embedded by *their* embedder: the concept is a PII type ("contains a person name" is
``PERSON``) or one of the attribute probe's attributes (``sex``, ``medical_family``, ``age_band``)::

    vectors, labels = corpus_concept_set(embedder, "PERSON")
    transform = LeaceErasure(1.0).fit(vectors, labels)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from vdbguard.corpus.embedded import embed_corpus
from vdbguard.corpus.labels import ATTRIBUTES, labels_of
from vdbguard.errors import VdbguardError
from vdbguard.pii import PROBED_TYPES, PiiType

if TYPE_CHECKING:
    from vdbguard.corpus import LabelledText
    from vdbguard.embedders import Embedder

ATTRIBUTE_CONCEPTS: tuple[str, ...] = ATTRIBUTES
CONCEPTS: tuple[str, ...] = (*(t.value for t in PROBED_TYPES), *ATTRIBUTE_CONCEPTS)
DEFAULT_CONCEPT = PiiType.PERSON.value


def concept_labels(items: Sequence[LabelledText], concept: str = DEFAULT_CONCEPT) -> np.ndarray:
    """One label per item: 0/1 (int64) for a PII type, a string for an attribute (None where ambiguous).

    Drop the None rows before fitting (``labels != None``); :func:`corpus_concept_set` does.
    """
    key = concept.strip()
    if key.upper() in PiiType.__members__:
        kind = PiiType[key.upper()]
        return np.array([kind in item.pii for item in items], dtype=np.int64)
    if key.lower() in ATTRIBUTE_CONCEPTS:
        return np.array([labels_of(item)[key.lower()] for item in items], dtype=object)
    raise VdbguardError(f"unknown concept {concept!r}", f"choose from: {', '.join(CONCEPTS)}")


def corpus_concept_set(
    embedder: Embedder, concept: str = DEFAULT_CONCEPT, n: int = 2000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` corpus sentences (half with PII, half clean) embedded by ``embedder``, with their concept labels.

    Ambiguous rows (an attribute the sentence does not settle) are left out, so fewer than ``n`` may
    come back. The embeddings are cached on disk like the attack-training corpus.
    """
    from vdbguard.corpus import build_corpus

    items = build_corpus(n // 2, n - n // 2, seed)
    labels = concept_labels(items, concept)
    known = np.array([label is not None for label in labels])
    return embed_corpus(embedder, items)[known], labels[known]


def missing_labels_error(name: str) -> VdbguardError:
    return VdbguardError(
        f"transform {name!r} learns where a concept lives in the vectors, so fit() needs labels",
        "pass fit(vectors, labels) with one label per row (e.g. 1 if the text names a person, else 0), or fit on "
        "vdbguard's labelled corpus: vectors, labels = vdbguard.transforms.concepts.corpus_concept_set(embedder, "
        "'PERSON'); transform.fit(vectors, labels)",
    )


def label_columns(labels: np.ndarray | Sequence, n: int, name: str) -> list[np.ndarray]:
    """Integer class codes (0..k-1) for each concept column: ``labels`` is shape (n,) or (n, columns)."""
    if labels is None:
        raise missing_labels_error(name)
    array = np.asarray(labels)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2 or len(array) != n:
        raise VdbguardError(
            f"labels must have one row per vector ({n}), got shape {array.shape}",
            "pass shape (n,) for one concept or (n, columns) for several",
        )
    columns = []
    for j in range(array.shape[1]):
        column = array[:, j]
        if column.dtype == object and any(value is None for value in column):
            raise VdbguardError(
                f"labels column {j} has unknown (None) entries", "drop those rows first: keep = labels != None"
            )
        classes, codes = np.unique(column.astype(str) if column.dtype == object else column, return_inverse=True)
        if len(classes) < 2:
            raise VdbguardError(
                f"labels column {j} has a single value {classes[0]!r}: there is no concept to learn",
                "fit on vectors where the concept is both present and absent",
            )
        columns.append(codes.astype(np.int64))
    return columns


def one_hot(columns: Sequence[np.ndarray]) -> np.ndarray:
    """Binary columns as one 0/1 column each, k-class columns as k indicator columns (float64)."""
    parts = []
    for codes in columns:
        k = int(codes.max()) + 1
        parts.append(codes[:, None].astype(np.float64) if k == 2 else np.eye(k)[codes])
    return np.concatenate(parts, axis=1)
