"""spaCy's NER skipped where its entities cannot count: the same detections as the engine that always runs it."""

from __future__ import annotations

import json
from pathlib import Path

from vdbguard.corpus import human_sentences, synthetic_pii
from vdbguard.detectors.presidio import PresidioDetector, PresidioNerDetector

FIXTURE = Path(__file__).parent / "data" / "real_text_fixture.jsonl"


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
    return real + templates + human_sentences("holdout")[:100] + births


def test_the_default_skips_the_ner_where_no_birth_word_is_and_finds_the_same() -> None:
    detector = PresidioDetector()
    engine = detector.analyzer.nlp_engine
    texts = _texts()
    assert engine.wanted is not None
    assert not engine.process_text("Paris is the capital of France.", "en").entities
    assert engine.process_text("Born in Paris on 3 May 1950.", "en").entities
    gated = detector.detect_many(texts), [detector.detect(text) for text in texts]
    wanted, engine.wanted = engine.wanted, None  # the analyzer is shared (cached): put its gate back
    try:
        assert engine.process_text("Paris is the capital of France.", "en").entities
        always = detector.detect_many(texts)
    finally:
        engine.wanted = wanted
    assert gated[0] == always and gated[1] == always
    assert sum(any(d.pii_type.value == "DATE_OF_BIRTH" for d in found) for found in always) >= 20


def test_version_6_runs_the_ner_on_every_text() -> None:
    engine = PresidioNerDetector().analyzer.nlp_engine
    assert engine.wanted is None
    assert engine.process_text("Paris is the capital of France.", "en").entities
