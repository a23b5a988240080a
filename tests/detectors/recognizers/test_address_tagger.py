"""The address head in Presidio's registry: addresses from the tagger's prepared batch, one score each; a tagger
without the head cannot back it."""

from __future__ import annotations

import pytest

from vdbguard.detectors.recognizers.address_tagger import ENTITY, AddressTaggerRecognizer
from vdbguard.detectors.recognizers.person_tagger import SCORE
from vdbguard.detectors.tagger import ADDRESS_DIR, PersonTagger


def test_prepared_and_unprepared_texts_get_the_heads_addresses() -> None:
    tagger = PersonTagger(addresses=ADDRESS_DIR)
    recognizer = AddressTaggerRecognizer(tagger)
    texts = ["Please send the refund to 1475 S. Wheeling Rd., Wheeling IL 60090.", "We met in Chicago last year."]
    tagger.prepare(texts)
    found = [[(r.entity_type, r.start, r.end, r.score) for r in recognizer.analyze(text, [ENTITY])] for text in texts]
    assert found == [[(ENTITY, s, e, SCORE) for s, e, _ in tagged.addresses] for tagged in tagger.tag(texts)]
    assert found[0] and "Wheeling Rd." in texts[0][found[0][0][1] : found[0][-1][2]] and found[1] == []
    tagger.prepare([])
    alone = "Ship to: Osterstrasse 15, 26122 Oldenburg"
    assert [alone[r.start : r.end] for r in recognizer.analyze(alone, [ENTITY])]


def test_a_tagger_without_the_head_cannot_back_the_recognizer() -> None:
    with pytest.raises(ValueError, match="no address head"):
        AddressTaggerRecognizer(PersonTagger())
