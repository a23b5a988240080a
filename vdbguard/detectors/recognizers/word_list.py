"""Listed words as entities, by set lookup, under a rule that may read the NER's entities of the same text."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from presidio_analyzer import EntityRecognizer, RecognizerResult

from vdbguard.detectors.recognizers.results import finding

_WORD_RUN = re.compile(r"\w+")
# When a listed word counts as a name (BENCHMARKS.md, "PII detector on real text"):
# - every: each one, capitalised or not, whatever the NER calls it (version 5)
# - veto: each one the NER does not put inside another entity (a place, an organisation, a product ...)
# - capitalised: a capitalised one the NER does not put inside another entity
# - agree: only inside a name the NER found
# - none: never
# Under capitalised and agree, a text with no capital letter at all (the lower-case word soup inversion produces,
# chat) has no case or NER evidence to read, so every listed word counts there as under every.
GAZETTEER_RULES = ("every", "veto", "capitalised", "agree", "none")
READS_ENTITIES = frozenset(GAZETTEER_RULES) - {"every", "none"}  # the rules that read the NER's entities


class WordListRecognizer(EntityRecognizer):
    """Presidio's deny-list recognizer, by set lookup: each maximal run of word characters whose lower case is in
    ``words``, which is exactly what the deny list's regex matches (under the rule ``every``). That regex (one
    alternation of 30,000 names) cost 9 ms per text, ten times the rest of the analyzer (BENCHMARKS.md, "PII
    detector"). The other ``GAZETTEER_RULES`` read the spaCy entities of the same text from ``nlp_artifacts``."""

    def __init__(self, entity: str, name: str, words: frozenset[str], score: float, rule: str = "every") -> None:
        if rule not in GAZETTEER_RULES:
            raise ValueError(f"unknown gazetteer rule {rule!r}; one of {GAZETTEER_RULES}")
        self.entity, self.words, self.score, self.rule = entity, words, score, rule
        super().__init__(supported_entities=[entity], name=name)

    def load(self) -> None:
        pass

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
        if self.rule == "none":
            return []
        matches = [match for match in _WORD_RUN.finditer(text) if match.group().lower() in self.words]
        if matches and self.rule in READS_ENTITIES:
            doc = getattr(nlp_artifacts, "tokens", None)
            matches = by_rule(self.rule, text, matches, () if doc is None else doc.ents)
        return [finding(self, self.entity, match.start(), match.end(), self.score) for match in matches]


def by_rule(rule: str, text: str, matches: list[re.Match[str]], ents: Sequence[Any]) -> list[re.Match[str]]:
    """The listed words that count as names under ``rule`` (not every), given the NER's entities (spaCy spans)."""
    if rule != "veto" and not any(c.isupper() for c in text):
        return matches  # lower-case word soup: neither case nor the NER says anything here

    def within(match: re.Match[str], person: bool) -> bool:
        return any(
            (ent.label_ == "PERSON") == person and ent.start_char < match.end() and match.start() < ent.end_char
            for ent in ents
        )

    if rule == "agree":
        return [match for match in matches if within(match, person=True)]
    kept = [match for match in matches if not within(match, person=False)]
    return kept if rule == "veto" else [match for match in kept if match.group()[0].isupper()]
