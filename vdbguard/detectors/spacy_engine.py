"""Presidio's spaCy engine, running spaCy's pipeline only as far as a text's detections need it.

With the tagger judging names and its head finding addresses, spaCy's entities count only as a birth date's
DATE_TIME, and its tagger and lemmatizer serve only Presidio's context rule, which reads the lemmas around a match
of a recognizer with context words. So a text without a birth word goes without the NER, and one that also holds no
likely such match (no digit or @) gets its tokens only, its lemmas made if a match needs them after all: the same
detections (``tests/detectors/test_spacy_engine.py`` checks them against the engine that runs it all), without most
of spaCy's CPU on most real text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Any

from presidio_analyzer import EntityRecognizer, RecognizerResult
from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer
from presidio_analyzer.nlp_engine import NlpArtifacts, SpacyNlpEngine

_NER = "ner"


class OnDemandSpacyEngine(SpacyNlpEngine):
    """``entities(text)``: whether spaCy's entities of ``text`` could count; ``lemmas(text)``: whether a match that
    reads lemmas is likely (a guess: ``completed`` makes them for any text that needs them after all, but one at a
    time, where a batch shares the work). None: the whole pipeline on every text."""

    def __init__(
        self,
        models: list[dict[str, str]],
        entities: Callable[[str], bool] | None = None,
        lemmas: Callable[[str], bool] | None = None,
    ) -> None:
        super().__init__(models=models)
        self.entities, self.lemmas = entities, lemmas

    def skipped(self, text: str, language: str = "en") -> tuple[str, ...]:
        """The components ``text`` goes without: none, the NER, or all (its tokens only)."""
        if self.entities is None or self.entities(text):
            return ()
        if self.lemmas is not None and self.lemmas(text):
            return (_NER,)
        return tuple(self.nlp[language].pipe_names)

    def process_text(self, text: str, language: str) -> NlpArtifacts:
        return self._doc_to_nlp_artifact(self.nlp[language](text, disable=self.skipped(text, language)), language)

    def process_batch(  # type: ignore[override]
        self, texts: Sequence[str], language: str, batch_size: int = 1, n_process: int = 1, as_tuples: bool = False
    ) -> Iterator[tuple[str, NlpArtifacts]]:
        if self.entities is None or as_tuples or n_process != 1:
            yield from super().process_batch(texts, language, batch_size, n_process, as_tuples)
            return
        nlp, stream, size = self.nlp[language], iter(texts), max(batch_size, 1)
        while chunk := [str(text) for text in islice(stream, size)]:
            groups: dict[tuple[str, ...], list[int]] = {}
            for i, text in enumerate(chunk):
                groups.setdefault(self.skipped(text, language), []).append(i)
            docs: list[Any] = [None] * len(chunk)
            for skipped, indices in groups.items():
                piped = nlp.pipe([chunk[i] for i in indices], batch_size=size, disable=list(skipped))
                for i, doc in zip(indices, piped, strict=True):
                    docs[i] = doc
            for doc in docs:
                yield doc.text, self._doc_to_nlp_artifact(doc, language)

    def completed(self, artifacts: NlpArtifacts, language: str = "en") -> NlpArtifacts:
        """``artifacts`` of a text that was only tokenized, with the pipeline's tags and lemmas (not its NER)."""
        doc = artifacts.tokens
        if doc.has_annotation("TAG"):
            return artifacts
        for name, component in self.nlp[language].pipeline:
            if name != _NER:
                doc = component(doc)
        return self._doc_to_nlp_artifact(doc, language)


class LemmasOnDemandEnhancer(LemmaContextAwareEnhancer):
    """Presidio's context rule, given the lemmas it reads: a text ``engine`` only tokenized is completed first when
    a result's recognizer has context words, unless the result's type is ``ignored`` (dropped whatever its score)."""

    def __init__(self, engine: OnDemandSpacyEngine, ignored: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.engine, self.ignored = engine, ignored

    def enhance_using_context(
        self,
        text: str,
        raw_results: list[RecognizerResult],
        nlp_artifacts: NlpArtifacts,
        recognizers: list[EntityRecognizer],
        context: list[str] | None = None,
    ) -> list[RecognizerResult]:
        if nlp_artifacts is not None and (context or self._reads_context(raw_results, recognizers)):
            nlp_artifacts = self.engine.completed(nlp_artifacts)
        return super().enhance_using_context(text, raw_results, nlp_artifacts, recognizers, context)

    def _reads_context(self, results: list[RecognizerResult], recognizers: list[EntityRecognizer]) -> bool:
        with_context = {recognizer.id for recognizer in recognizers if recognizer.context}
        key = RecognizerResult.RECOGNIZER_IDENTIFIER_KEY
        return any(
            result.entity_type not in self.ignored and (result.recognition_metadata or {}).get(key) in with_context
            for result in results
        )
