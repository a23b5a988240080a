"""The recognizers a user's ``[[identifiers]]`` define, as Presidio would build them from its ad-hoc JSON.

Patterns are Presidio's ``PatternRecognizer`` (its regex flags, its context rule), with the named checksum as
``validate_result``: a match that passes scores 1.0, one that fails is dropped. Deny lists are looked up by word
rather than by Presidio's one alternation regex, which cost 9 ms a text for 30,000 names (the name gazetteer's
lesson): a customer list of that size must not slow every scan down.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from vdbguard.detectors.validators import CHECKSUMS
from vdbguard.identifiers import Identifier

_WORD = re.compile(r"\w+")


def custom_recognizers(identifiers: Sequence[Identifier]) -> list[Any]:
    """Presidio recognizers for each identifier: one for its patterns, one for its deny list."""
    recognizers: list[Any] = []
    for identifier in identifiers:
        if identifier.patterns:
            recognizers.append(_pattern_recognizer(identifier))
        if identifier.deny_list:
            recognizers.append(deny_list_recognizer(identifier))
    return recognizers


def _pattern_recognizer(identifier: Identifier):  # -> presidio_analyzer.PatternRecognizer
    from presidio_analyzer import Pattern, PatternRecognizer

    checksum = CHECKSUMS[identifier.validator] if identifier.validator else None

    class CustomPatternRecognizer(PatternRecognizer):
        def validate_result(self, pattern_text: str) -> bool | None:
            return None if checksum is None else checksum(pattern_text)

    name = identifier.recognizer_name
    patterns = [Pattern(p.name or f"{name} {i}", p.regex, p.score) for i, p in enumerate(identifier.patterns or ())]
    return CustomPatternRecognizer(
        supported_entity=str(identifier.pii_type), name=name, patterns=patterns, context=identifier.context or None
    )


def deny_list_recognizer(identifier: Identifier):  # -> presidio_analyzer.EntityRecognizer
    """Each deny-list phrase where its words stand in a row, whatever their case and the punctuation between them."""
    from presidio_analyzer import EntityRecognizer, RecognizerResult

    phrases = {tuple(_WORD.findall(phrase.lower())) for phrase in identifier.deny_list or ()}
    lengths: dict[str, list[int]] = {}
    for phrase in phrases:
        lengths.setdefault(phrase[0], []).append(len(phrase))
    for first in lengths:
        lengths[first] = sorted(set(lengths[first]), reverse=True)  # the longest phrase at a word wins
    entity, score = str(identifier.pii_type), identifier.deny_list_score

    class DenyListRecognizer(EntityRecognizer):
        def load(self) -> None:
            pass

        def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
            words = list(_WORD.finditer(text))
            lowered = [word.group().lower() for word in words]
            found = []
            for i, first in enumerate(lowered):
                for length in lengths.get(first, ()):
                    if tuple(lowered[i : i + length]) in phrases:
                        metadata = {
                            RecognizerResult.RECOGNIZER_NAME_KEY: self.name,
                            RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id,
                        }
                        start, end = words[i].start(), words[i + length - 1].end()
                        found.append(RecognizerResult(entity, start, end, score, recognition_metadata=metadata))
                        break
            return found

    name = identifier.recognizer_name + ("DenyList" if identifier.patterns else "")
    return DenyListRecognizer(supported_entities=[entity], name=name, context=identifier.context or None)
