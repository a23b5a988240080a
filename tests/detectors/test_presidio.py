"""Presidio must work with the network gone: a bare AnalyzerEngine() fetches files and fails here."""

import socket

import pytest

from vdbguard.detectors.presidio import PresidioDetector, name_gazetteer
from vdbguard.pii import PiiType


@pytest.fixture(scope="module")
def detector() -> PresidioDetector:
    return PresidioDetector()


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("vdbguard tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)


def types_in(detector: PresidioDetector, text: str) -> set[PiiType]:
    return {d.pii_type for d in detector.detect(text)}


def test_detects_core_types_offline(detector: PresidioDetector, no_network: None) -> None:
    text = (
        "Patient Maria Gonzalez, email maria.gonzalez@example.org, phone (415) 555-0142, "
        "SSN 536-22-8147, card 4111 1111 1111 1111, was born on 12 March 1961 and takes metformin."
    )
    found = types_in(detector, text)
    expected = {
        PiiType.PERSON,
        PiiType.EMAIL,
        PiiType.PHONE,
        PiiType.SSN,
        PiiType.CREDIT_CARD,
        PiiType.DATE_OF_BIRTH,
        PiiType.MEDICAL,
    }
    assert expected <= found


def test_gazetteer_finds_names_in_lowercase_word_soup(detector: PresidioDetector) -> None:
    detections = detector.detect("invoice overdue gonzalez payment account")
    assert any(d.pii_type is PiiType.PERSON and d.value == "gonzalez" for d in detections)


def test_ordinary_text_is_clean(detector: PresidioDetector) -> None:
    assert types_in(detector, "The printer on the third floor keeps jamming after the update.") == set()


def test_gazetteer_excludes_common_english_words() -> None:
    names = name_gazetteer()
    assert len(names) > 5000
    assert {"smith", "gonzalez"} <= names
    assert not {"will", "the", "printer", "computer"} & names
