"""Passports, driving licences and national ids, from Presidio's predefined recognizers.

Presidio ships one recognizer per country and document. Asked about every text, the 44 used here cost more analyzer
time than all of vdbguard's other recognizers together, and called phone numbers NHS numbers and account numbers
Aadhaar numbers: a tenth of random digits pass a mod-10 or mod-11 checksum. So one recognizer holds them all
here: it runs a country's recognizer only on a text that holds one of its context words ("passport", "NINO",
"codice fiscale"), and keeps a match only with such a word near it (60 characters before, 30 after), scored as
Presidio's context rule scores it (+0.35, and at least 0.4). Context words that are ordinary English ("us",
"document", "tax") or short acronyms that are ("pan", "sin", "fin") do not count.
"""

from __future__ import annotations

import re
from typing import Any

import presidio_analyzer.predefined_recognizers as predefined
from presidio_analyzer import EntityRecognizer, RecognizerResult

from vdbguard.detectors.entities import DOCUMENT_GROUPS
from vdbguard.pii import PiiType

# Presidio's context words that ordinary English text is full of, that name nothing on their own, or that name
# another type ("ssn": the US number, found as SSN; Presidio's Swedish recognizer counts it)
NOT_CONTEXT = frozenset(
    {
        "us", "united", "states", "travel", "document", "documento", "individual", "tax", "payer", "canada", "id",
        "identity", "identification", "permit", "pass", "carta", "elettronica", "elettronico", "italiano",
        "viaggio", "viaggiare", "estero", "dogana", "riconoscimento", "espatrio", "rente", "dak", "aok", "bir",
        "rdo", "epic", "sss", "fin", "sin", "pan", "cf", "nas", "lic", "dls", "cdls", "driver", "driving",
        "licence", "license", "fev", "drv", "cie", "dha", "dfa", "crn", "tin", "npa", "kba", "egk", "gkv", "tkk",
        "barmer", "voter", "identità", "seriennummer", "dokumentennummer", "ssn",
    }
)  # fmt: skip
# phrases every recognizer of a type also counts: Presidio's US lists lack them ("driver's license")
TYPE_CONTEXT: dict[PiiType, tuple[str, ...]] = {
    PiiType.PASSPORT: ("passport", "passport number", "passport no"),
    PiiType.DRIVER_LICENSE: (
        "driver's license", "drivers license", "driver license", "driver's licence", "drivers licence",
        "driving licence", "driving license", "licence number", "license number", "dl number", "dl#", "dl no",
    ),
    PiiType.NATIONAL_ID: (
        "national id", "national identity number", "national insurance number", "personal identity number",
        "taxpayer id", "tax id", "voter id",
    ),
}  # fmt: skip
BEFORE, AFTER = 60, 30  # characters around a match a context word may stand in
CONTEXT_BOOST, CONTEXT_FLOOR = 0.35, 0.4  # Presidio's context rule: a context word adds 0.35, and lifts to 0.4


def _words_pattern(words: set[str]) -> re.Pattern[str]:
    """Any of ``words`` as a whole word or phrase (spaces match any whitespace), ignoring case."""
    alternatives = sorted((re.escape(w).replace(r"\ ", r"\s+") for w in words), key=len, reverse=True)
    return re.compile(rf"(?<!\w)(?:{'|'.join(alternatives)})(?!\w)", re.IGNORECASE)


def _predefined(name: str) -> Any:
    """Presidio's recognizer ``name``, made to answer English requests (its own language may be another)."""
    cls = getattr(predefined, name)
    try:
        return cls(supported_language="en")
    except TypeError:
        recognizer = cls()
        recognizer.supported_language = "en"
        return recognizer


def _context_of(recognizer: Any, pii_type: PiiType) -> set[str]:
    own = {word.lower() for word in recognizer.context or ()} - NOT_CONTEXT
    return own | set(TYPE_CONTEXT[pii_type])


_WORD = re.compile(r"\w+")


def _key(word: str) -> str:
    return " ".join(word.lower().split())


def _around(text: str, start: int, end: int) -> str:
    return f"{text[max(0, start - BEFORE) : start]} {text[end : end + AFTER]}"


class IdentityDocumentRecognizer(EntityRecognizer):
    """One recognizer for every type of ``DOCUMENT_GROUPS``: each country's recognizer runs only on a text that holds
    one of its context words (one pass of one regex finds which), and a match counts only with such a word near it."""

    def __init__(self) -> None:
        self.inner = []  # (type, recognizer, its context words as a pattern)
        self.runs: dict[str, list[int]] = {}  # context word -> the recognizers it wakes, in DOCUMENT_GROUPS order
        for pii_type, names in DOCUMENT_GROUPS.items():
            for name in names:
                recognizer = _predefined(name)
                context = _context_of(recognizer, pii_type)
                for word in context:
                    self.runs.setdefault(_key(word), []).append(len(self.inner))
                self.inner.append((pii_type.value, recognizer, _words_pattern(context)))
        self.gate = _words_pattern(set(self.runs))
        self.first_words = frozenset(_WORD.findall(word)[0] for word in self.runs)  # none in a text: no context word
        super().__init__(supported_entities=[t.value for t in DOCUMENT_GROUPS], name="IdentityDocumentRecognizer")

    def load(self) -> None:
        pass

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
        if self.first_words.isdisjoint(_WORD.findall(text.lower())):
            return []  # a sixth of the gate regex's time, on the texts that hold no context word
        woken = sorted({i for match in self.gate.finditer(text) for i in self.runs.get(_key(match.group()), ())})
        found = []
        for entity, recognizer, context in (self.inner[i] for i in woken):
            for result in recognizer.analyze(text, recognizer.supported_entities, None) or ():
                if result.score > 0 and context.search(_around(text, result.start, result.end)):
                    metadata = {
                        RecognizerResult.RECOGNIZER_NAME_KEY: recognizer.name,
                        RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id,
                        RecognizerResult.IS_SCORE_ENHANCED_BY_CONTEXT_KEY: True,
                    }
                    score = round(min(1.0, max(result.score + CONTEXT_BOOST, CONTEXT_FLOOR)), 4)
                    start, end = result.start, result.end
                    found.append(RecognizerResult(entity, start, end, score, recognition_metadata=metadata))
        return found
