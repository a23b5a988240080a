"""Presidio's spaCy engine, running spaCy's pipeline only as far as a text's detections need it.

With the tagger judging names and its head finding addresses, spaCy's entities count only as a birth date's
DATE_TIME, and its tagger and lemmatizer serve only Presidio's context rule, which reads the lemmas around a match
of a recognizer with context words. So a text without a birth word is only tokenized, and its lemmas are made when
such a match needs them: the same detections (``tests/detectors/test_spacy_engine.py`` checks them against the
engine that runs it all), without most of spaCy's CPU on texts that hold no such match.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import islice

from presidio_analyzer import EntityRecognizer, RecognizerResult
from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer
from presidio_analyzer.nlp_engine import NlpArtifacts, SpacyNlpEngine

_NER = "ner"


class OnDemandSpacyEngine(SpacyNlpEngine):
    """``whole(text)``: whether ``text`` needs the whole pipeline up front (its entities could count); None:
    every text does. Other texts get their tokens, and the rest but the NER when ``completed`` asks."""

    def __init__(self, models: list[dict[str, str]], whole: Callable[[str], bool] | None = None) -> None:
        super().__init__(models=models)
        self.whole = whole

    def tokens_only(self, text: str) -> bool:
        return self.whole is not None and not self.whole(text)

    def process_text(self, text: str, language: str) -> NlpArtifacts:
        nlp = self.nlp[language]
        return self._doc_to_nlp_artifact(nlp.make_doc(text) if self.tokens_only(text) else nlp(text), language)

    def process_batch(  # type: ignore[override]
        self, texts: Sequence[str], language: str, batch_size: int = 1, n_process: int = 1, as_tuples: bool = False
    ) -> Iterator[tuple[str, NlpArtifacts]]:
        if self.whole is None or as_tuples or n_process != 1:
            yield from super().process_batch(texts, language, batch_size, n_process, as_tuples)
            return
        nlp, stream, size = self.nlp[language], iter(texts), max(batch_size, 1)
        while chunk := [str(text) for text in islice(stream, size)]:
            whole = [i for i, text in enumerate(chunk) if not self.tokens_only(text)]
            docs = dict(zip(whole, nlp.pipe([chunk[i] for i in whole], batch_size=size), strict=True))
            for i, text in enumerate(chunk):
                doc = docs[i] if i in docs else nlp.make_doc(text)
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
