"""IBANs by checksum, the longest valid prefix of each run of capitals and digits."""

from __future__ import annotations

import re
from typing import Any

from presidio_analyzer import EntityRecognizer, RecognizerResult

from vdbguard.detectors.validators import iban_valid

_IBAN_RUN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}")


class ChecksumIbanRecognizer(EntityRecognizer):
    """Presidio's IBAN pattern is greedy and case-blind, so a word after some IBANs joined the match and failed the
    checksum; this one keeps the longest prefix of a run that passes ISO 13616's check."""

    def __init__(self) -> None:
        super().__init__(supported_entities=["IBAN_CODE"], name="ChecksumIbanRecognizer")

    def load(self) -> None:
        pass

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
        found = []
        for match in _IBAN_RUN.finditer(text):
            run = match.group()
            ends = [i + 1 for i, c in enumerate(run) if c != " "]
            for end in reversed(ends):
                if (end == len(run) or run[end] == " ") and iban_valid(run[:end]):
                    metadata = {RecognizerResult.RECOGNIZER_NAME_KEY: self.name}
                    start = match.start()
                    found.append(RecognizerResult("IBAN_CODE", start, start + end, 1.0, recognition_metadata=metadata))
                    break
        return found
