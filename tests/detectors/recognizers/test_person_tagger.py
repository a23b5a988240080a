"""The tagger in Presidio's registry: a prepared batch answers from what the tagger found for it, any other text is
tagged alone, and every name scores the same."""

from __future__ import annotations

from vdbguard.detectors.recognizers.person_tagger import SCORE, PersonTaggerRecognizer
from vdbguard.detectors.tagger import PersonTagger


def test_prepared_and_unprepared_texts_get_the_taggers_names() -> None:
    tagger = PersonTagger()
    recognizer = PersonTaggerRecognizer(tagger)
    texts = ["Ask Maria Gonzalez about the invoice.", "The printer on floor 3 is jammed."]
    tagger.prepare(texts)
    found = [[(r.start, r.end, r.score) for r in recognizer.analyze(text, ["PERSON"])] for text in texts]
    assert found == [[(s, e, SCORE) for s, e, _ in spans] for spans in tagger.find(texts)]
    assert [texts[0][s:e] for s, e, _ in found[0]] == ["Maria Gonzalez"] and found[1] == []
    tagger.prepare([])
    assert tagger.prepared == {}
    alone = "Thanks, Priya Raman"
    assert [alone[r.start : r.end] for r in recognizer.analyze(alone, ["PERSON"])] == ["Priya Raman"]
