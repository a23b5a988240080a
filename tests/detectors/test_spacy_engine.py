"""spaCy run only as far as a text needs: the same detections as the engine that runs its whole pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from presidio_analyzer import EntityRecognizer

from vdbguard.corpus import human_sentences, synthetic_pii
from vdbguard.detectors.presidio import PresidioDetector, PresidioNerDetector
from vdbguard.identifiers import DetectorSettings

FIXTURE = Path(__file__).parent / "data" / "real_text_fixture.jsonl"
PLACE = "Paris is the capital of France."


def _texts() -> list[str]:
    real = [json.loads(line)["text"] for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    templates = [item.text for item in synthetic_pii(300, seed=5)]
    births = [
        "Patient born on 6 April 1946 at Leeds General, seen by Dr Okafor.",
        "DOB: 20 Apr 1997. Lives at 60 Cattigan Street, Cailum Ville.",
        "Her birthday is March 3 and she lives in Paris.",
        "d.o.b. 1985-03-14, John Smith, Sudan",
        "clk2.inc, #B1, dobong-ro 121gil, dobong-gu seoul, korea seoul seoul KR 14440",  # a slice's "dob" counts
    ]
    context = ["Call me on 020 7946 0018 tomorrow.", "Order 4111 1111 1111 1111 shipped.", "card 4111111111111111"]
    return real + templates + human_sentences("holdout")[:100] + births + context


def test_the_default_runs_spacy_only_as_far_as_each_text_needs_and_finds_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    detector = PresidioDetector()
    engine = detector.analyzer.nlp_engine
    place = engine.process_text(PLACE, "en")
    assert not place.entities and not place.tokens.has_annotation("TAG")
    assert engine.process_text("Born in Paris on 3 May 1950.", "en").entities
    assert engine.completed(place).lemmas[0] == "Paris" and engine.completed(place).tokens.has_annotation("TAG")
    completed = []
    monkeypatch.setattr(
        engine, "completed", lambda artifacts: completed.append(1) or type(engine).completed(engine, artifacts)
    )
    texts = _texts()
    on_demand = detector.detect_many(texts), [detector.detect(text) for text in texts]
    assert 0 < len(completed) < len(texts)  # the context rule asked for lemmas on some texts, not all
    monkeypatch.setattr(engine, "entities", None)
    assert engine.process_text(PLACE, "en").entities
    whole = detector.detect_many(texts)
    assert on_demand[0] == whole and on_demand[1] == whole
    assert sum(any(d.pii_type.value == "DATE_OF_BIRTH" for d in found) for found in whole) >= 20


def test_a_text_left_at_its_tokens_gets_its_lemmas_when_a_context_word_could_count() -> None:
    settings = DetectorSettings.model_validate(
        {
            "identifiers": [
                {
                    "supported_entity": "PROJECT_CODE",
                    "patterns": [{"name": "code", "regex": r"\bPRJ-[A-Z]{4}\b", "score": 0.1}],
                    "context": ["mouse"],  # found by its lemma: "mice" reads as "mouse" only once lemmatized
                }
            ]
        }
    )
    detector = PresidioDetector(settings=settings)
    text = "The mice were tagged PRJ-ABCD last week."  # no digit: tokens only, until the rule needs lemmas
    assert detector.analyzer.nlp_engine.skipped(text) == tuple(detector.analyzer.nlp_engine.nlp["en"].pipe_names)
    assert [d.value for d in detector.detect(text)] == ["PRJ-ABCD"]
    assert [d.value for d in detector.detect("The cats were tagged PRJ-ABCD last week.")] == []


def test_no_recognizer_reads_lemmas_before_the_context_rule_completes_them() -> None:
    recognizers = PresidioDetector().analyzer.registry.recognizers
    assert [
        r.name for r in recognizers if type(r).enhance_using_context is not EntityRecognizer.enhance_using_context
    ] == []


def test_version_6_runs_the_whole_pipeline_on_every_text() -> None:
    engine = PresidioNerDetector().analyzer.nlp_engine
    assert engine.entities is None
    assert engine.process_text(PLACE, "en").entities
