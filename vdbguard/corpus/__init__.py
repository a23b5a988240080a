"""Labelled training text for the attack models, and the held-out text the demo store is built from.

The attacks (a bag-of-words inverter and one probe per PII type) learn from ``(text, embedding)`` pairs, so
the text they learn from decides what they can find. Two properties matter more than size:

* **Exact labels.** ``LabelledText.pii`` names exactly the PII types whose literal values were inserted,
  and ``values`` holds those literals, so tests can check every label against the text itself.
* **Hard negatives.** Clean sentences come from the very same templates as the PII ones
  (:mod:`vdbguard.corpus.generator`), so a probe has to find the value, not the sentence shape.

Human-written lines (:mod:`vdbguard.corpus.human`) add style diversity to the clean side.

Modules: ``labelled`` (``LabelledText``, ``corpus_hash``), ``templates`` (the tables), ``generator``,
``human``, ``build`` (``build_corpus``), ``labels`` (attribute labels shared by attacks and transforms)
and ``embedded`` (corpus embeddings cached on disk).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from vdbguard.corpus.labelled import DEFAULT_LOCALES, LabelledText, corpus_hash

if TYPE_CHECKING:
    from vdbguard.corpus.build import build_corpus
    from vdbguard.corpus.generator import synthetic_clean, synthetic_pii
    from vdbguard.corpus.human import human_sentences, looks_like_person_name, mid_sentence_capitals
    from vdbguard.corpus.templates import TEMPLATES

__all__ = [
    "DEFAULT_LOCALES",
    "TEMPLATES",
    "LabelledText",
    "build_corpus",
    "corpus_hash",
    "human_sentences",
    "looks_like_person_name",
    "mid_sentence_capitals",
    "synthetic_clean",
    "synthetic_pii",
]

_LAZY: dict[str, str] = {
    "TEMPLATES": "templates",
    "build_corpus": "build",
    "human_sentences": "human",
    "looks_like_person_name": "human",
    "mid_sentence_capitals": "human",
    "synthetic_clean": "generator",
    "synthetic_pii": "generator",
}


def __getattr__(name: str) -> object:
    """Load the generators on first use: ``LabelledText`` alone (what every attack needs) must not pull in
    Faker, yaml or spaCy."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
