"""The name list by set lookup: Presidio's own deny list's matches, and each rule's words."""

from __future__ import annotations

from vdbguard.detectors.lexicon import name_gazetteer
from vdbguard.detectors.recognizers.registry import GAZETTEER_SCORE
from vdbguard.detectors.recognizers.word_list import WordListRecognizer, by_rule


def test_the_gazetteer_by_set_lookup_matches_presidios_own_deny_list() -> None:
    from presidio_analyzer import PatternRecognizer

    from vdbguard.corpus import human_sentences, synthetic_pii

    names = name_gazetteer()
    presidio = PatternRecognizer(
        supported_entity="NAME_GAZETTEER", deny_list=sorted(names), deny_list_score=GAZETTEER_SCORE
    )
    ours = WordListRecognizer("NAME_GAZETTEER", "NameGazetteerRecognizer", names, GAZETTEER_SCORE)
    texts = [item.text.lower() for item in synthetic_pii(150, seed=11)] + human_sentences("holdout")[:150]
    texts += ["smith2 _smith smith_ smith-jones O'Brien", "garcía garcia GARCIA\nmüller", "", "smith"]

    def spans(recognizer, text: str) -> list[tuple[int, int, float]]:
        found = recognizer.analyze(text=text, entities=["NAME_GAZETTEER"], nlp_artifacts=None)
        return sorted((r.start, r.end, r.score) for r in found)

    found = [spans(ours, text) for text in texts]
    assert found == [spans(presidio, text) for text in texts]
    assert sum(map(len, found)) > 100


def test_the_name_list_counts_a_word_where_its_rule_says() -> None:
    """Each rule of the name list on one text, given the NER's entities (version 6's rule is its default)."""
    import re
    from types import SimpleNamespace

    text = "Mia Houston flew to Houston with mia."
    matches = list(re.finditer(r"Mia|Houston|mia", text))
    ents = [
        SimpleNamespace(label_="PERSON", start_char=0, end_char=11),
        SimpleNamespace(label_="GPE", start_char=20, end_char=27),
    ]

    def kept(rule: str, words: str = text) -> list[tuple[int, str]]:
        return [(m.start(), m.group()) for m in by_rule(rule, words, matches, ents)]

    assert kept("veto") == [(0, "Mia"), (4, "Houston"), (33, "mia")]
    assert kept("capitalised") == [(0, "Mia"), (4, "Houston")]
    assert kept("agree") == [(0, "Mia"), (4, "Houston")]
    soup = text.lower()
    assert len(kept("capitalised", soup)) == len(kept("agree", soup)) == 4, "no capital letter: every listed word"
