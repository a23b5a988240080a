"""A capitalised word after a personal title ("Ms Calbo", "Dr. van der Wal"): the title says it names a person."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from presidio_analyzer import EntityRecognizer, RecognizerResult

from vdbguard.detectors.recognizers.results import finding
from vdbguard.text import TITLES

_PARTICLES = frozenset({"van", "von", "der", "den", "de", "da", "di", "del", "la", "le", "du", "dos", "ter", "ten"})
# a title, then initials, particles and capitalised words (any script), as long as they run
_TITLED = re.compile(
    r"\b(?P<title>" + "|".join(sorted((t.capitalize() for t in TITLES), key=len, reverse=True)) + r")\.?"
    r"(?P<name>(?:[ \t]+(?:[^\W\d_]\.|(?:" + "|".join(sorted(_PARTICLES)) + r")(?=[ \t])|[^\W\d_][\w'’-]*))+)"
)
_POSSESSIVE = re.compile(r"(?:['’]s?)?$")
_WORD_BEFORE = re.compile(r"([^\W_][\w'’-]*)[ \t]+$")


class TitledNameRecognizer(EntityRecognizer):
    """The learned tagger reads a title as a feature of nothing and misses "Ms Calbo" after technical prose, where its
    training put few titles; a title before a capitalised word is a person by how English writes one. "Dr" after a
    capitalised word or a number is a street ("12 Tasman Dr Auckland")."""

    entity: ClassVar[str] = "PERSON"
    # below the tagger's 0.85: where both find one span, Presidio keeps the higher score, and a tie would be kept by
    # whichever recognizer ran first, which a detector worker may order otherwise
    score: ClassVar[float] = 0.8

    def __init__(self) -> None:
        super().__init__(supported_entities=[self.entity], name=type(self).__name__)

    def load(self) -> None:
        pass

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
        results = []
        at = 0
        while match := _TITLED.search(text, at):
            end = _name_end(text, match)
            at = match.end("title") if end is None else end  # "Mr. and Mrs. Smith": Mrs's name is Mr's words
            if end is None or (match.group("title") == "Dr" and _street_before(text, match.start())):
                continue
            results.append(finding(self, self.entity, match.start(), end, self.score))
        return results


def _name_end(text: str, match: re.Match[str]) -> int | None:
    """Where the name after the title ends: its last capitalised word or initial (None: no capitalised word)."""
    end = None
    at = match.start("name")
    for word in re.finditer(r"\S+", text[at : match.end("name")]):
        token = word.group()
        if token in _PARTICLES:
            continue
        if not token[0].isupper() or (len(token.rstrip(".")) > 1 and token.isupper()):
            break  # "Ms Calbo is", "Miss Fortune ARIES": an acronym is not a name's word
        end = at + word.end() - len(_POSSESSIVE.search(token).group())
    return end


def _street_before(text: str, start: int) -> bool:
    before = _WORD_BEFORE.search(text, 0, start)
    if before is None:
        return False
    word = before.group(1)
    head = text[: before.start()].rstrip()
    initial = re.search(r"(?:^|\s)[^\W\d_]\.$", head) is not None  # "3301 E. Deseret Dr." ends no sentence
    return word[0].isdigit() or (word[0].isupper() and bool(head) and (head[-1] not in ".!?:;(\"'" or initial))
