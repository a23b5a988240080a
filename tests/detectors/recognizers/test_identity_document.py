"""Passports, licences and national ids: a country's recognizer counts only beside one of its context words."""

from __future__ import annotations

import pytest

from vdbguard.detectors.recognizers.identity_document import IdentityDocumentRecognizer


@pytest.fixture(scope="module")
def recognizer() -> IdentityDocumentRecognizer:
    return IdentityDocumentRecognizer()


def _found(recognizer: IdentityDocumentRecognizer, text: str) -> list[tuple[str, str]]:
    return [(r.entity_type, text[r.start : r.end]) for r in recognizer.analyze(text, recognizer.supported_entities)]


def test_a_number_beside_its_context_word_is_found(recognizer: IdentityDocumentRecognizer) -> None:
    assert ("PASSPORT", "912803456") in _found(recognizer, "Her passport number is 912803456.")
    assert ("NATIONAL_ID", "943 476 5919") in _found(recognizer, "NHS number 943 476 5919 on the referral")


def test_the_same_digits_without_a_context_word_are_nothing(recognizer: IdentityDocumentRecognizer) -> None:
    assert _found(recognizer, "Order 912803456 ships on Monday.") == []
    assert _found(recognizer, "call 943 476 5919 after six") == []
    assert _found(recognizer, "the US tax document, pan and sin 912803456") == [], "ordinary words are no context"
