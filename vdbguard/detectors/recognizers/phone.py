"""Phone numbers by Presidio's recognizer (python-phonenumbers over eight regions), skipped in a text too short of
digits to hold one: its matcher was a fifth of the detector's time on texts that mostly hold none."""

from __future__ import annotations

from typing import Any

from presidio_analyzer import RecognizerResult
from presidio_analyzer.predefined_recognizers import PhoneRecognizer

# no region's valid national number is shorter (phonenumbers' metadata: Germany, Austria and others), and a number
# in letters ("1-800-FLOWERS") is not valid at the recognizer's leniency
MIN_DIGITS = 4


class DigitGatedPhoneRecognizer(PhoneRecognizer):
    def __init__(self) -> None:
        super().__init__(name="PhoneRecognizer")

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
        if sum(character.isdigit() for character in text) < MIN_DIGITS:
            return []
        return super().analyze(text, entities, nlp_artifacts)
