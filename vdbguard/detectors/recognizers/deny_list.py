"""A user's ``[[identifiers]]`` deny list, looked up by word: Presidio's one alternation regex cost 9 ms a text for
30,000 names (the name gazetteer's lesson), and a customer list of that size must not slow every scan down."""

from __future__ import annotations

import re
from typing import Any

from presidio_analyzer import EntityRecognizer, RecognizerResult

from vdbguard.detectors.recognizers.results import finding
from vdbguard.identifiers import Identifier

_WORD = re.compile(r"\w+")


class DenyListRecognizer(EntityRecognizer):
    """Each deny-list phrase where its words stand in a row, whatever their case and the punctuation between them."""

    def __init__(self, identifier: Identifier) -> None:
        self.phrases = {tuple(_WORD.findall(phrase.lower())) for phrase in identifier.deny_list or ()}
        self.lengths: dict[str, list[int]] = {}
        for phrase in self.phrases:
            self.lengths.setdefault(phrase[0], []).append(len(phrase))
        for first in self.lengths:
            self.lengths[first] = sorted(set(self.lengths[first]), reverse=True)  # the longest phrase at a word wins
        self.entity, self.score = str(identifier.pii_type), identifier.deny_list_score
        name = identifier.recognizer_name + ("DenyList" if identifier.patterns else "")
        super().__init__(supported_entities=[self.entity], name=name, context=identifier.context or None)

    def load(self) -> None:
        pass

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
        words = list(_WORD.finditer(text))
        lowered = [word.group().lower() for word in words]
        found = []
        for i, first in enumerate(lowered):
            for length in self.lengths.get(first, ()):
                if tuple(lowered[i : i + length]) in self.phrases:
                    start, end = words[i].start(), words[i + length - 1].end()
                    found.append(finding(self, self.entity, start, end, self.score))
                    break
        return found
