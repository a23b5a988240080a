"""Presidio's spaCy engine, running spaCy's NER only on the texts whose entities the detector could report.

With the tagger judging names and its head finding addresses, spaCy's entities count only as a birth date's
DATE_TIME, so its NER (a fifth of the detector's CPU) is skipped on a text without a birth word: the same
detections, which ``tests/detectors/test_spacy_engine.py`` checks against the engine that always runs it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Any

from presidio_analyzer.nlp_engine import NlpArtifacts, SpacyNlpEngine

_NER = ["ner"]


class EntitiesWhenWantedEngine(SpacyNlpEngine):
    """``wanted(text)``: whether spaCy's entities of ``text`` could count; None: always."""

    def __init__(self, models: list[dict[str, str]], wanted: Callable[[str], bool] | None = None) -> None:
        super().__init__(models=models)
        self.wanted = wanted

    def _skipped(self, text: str) -> list[str]:
        return [] if self.wanted is None or self.wanted(text) else _NER

    def process_text(self, text: str, language: str) -> NlpArtifacts:
        return self._doc_to_nlp_artifact(self.nlp[language](text, disable=self._skipped(text)), language)

    def process_batch(  # type: ignore[override]
        self, texts: Sequence[str], language: str, batch_size: int = 1, n_process: int = 1, as_tuples: bool = False
    ) -> Iterator[tuple[str, NlpArtifacts]]:
        if self.wanted is None or as_tuples or n_process != 1:
            yield from super().process_batch(texts, language, batch_size, n_process, as_tuples)
            return
        nlp, stream, size = self.nlp[language], iter(texts), max(batch_size, 1)
        while chunk := [str(text) for text in islice(stream, size)]:
            docs: list[Any] = [None] * len(chunk)
            for skipped in ([], _NER):
                indices = [i for i, text in enumerate(chunk) if self._skipped(text) == skipped]
                piped = nlp.pipe([chunk[i] for i in indices], batch_size=size, disable=skipped)
                for i, doc in zip(indices, piped, strict=True):
                    docs[i] = doc
            for doc in docs:
                yield doc.text, self._doc_to_nlp_artifact(doc, language)
