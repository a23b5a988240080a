"""Recognizers that are only settings: each declares its entity, patterns, context and deny list once, and is named
after its class."""

from __future__ import annotations

import pytest
from presidio_analyzer import AnalyzerEngine, RecognizerRegistry

from vdbguard.detectors.recognizers.account_number import AccountNumberRecognizer
from vdbguard.detectors.recognizers.medical import MedicalTermRecognizer
from vdbguard.detectors.recognizers.undashed_ssn import UndashedSsnRecognizer


@pytest.fixture(scope="module")
def analyzer() -> AnalyzerEngine:
    """An analyzer with only these three, so Presidio's context rule (which needs its NLP engine) scores them."""
    from vdbguard.detectors.presidio import PresidioNerDetector

    engine = PresidioNerDetector().analyzer.nlp_engine
    registry = RecognizerRegistry(
        recognizers=[AccountNumberRecognizer(), UndashedSsnRecognizer(), MedicalTermRecognizer()]
    )
    return AnalyzerEngine(registry=registry, nlp_engine=engine, supported_languages=["en"])


def _scored(analyzer: AnalyzerEngine, text: str) -> dict[str, float]:
    return {f"{r.entity_type}:{text[r.start : r.end]}": r.score for r in analyzer.analyze(text, language="en")}


def test_each_is_named_after_its_class() -> None:
    for recognizer in (AccountNumberRecognizer(), UndashedSsnRecognizer(), MedicalTermRecognizer()):
        assert recognizer.name == type(recognizer).__name__


def test_bare_digits_count_only_beside_their_context_words(analyzer: AnalyzerEngine) -> None:
    with_context = _scored(analyzer, "Savings account 12345678 and ssn 123456789 on file.")
    without = _scored(analyzer, "Order 12345678 shipped; tracking 123456789 attached.")
    assert with_context["US_BANK_NUMBER:12345678"] >= 0.4 and with_context["US_SSN:123456789"] >= 0.4
    assert all(score < 0.4 for score in without.values())


def test_medical_terms_come_from_the_deny_list(analyzer: AnalyzerEngine) -> None:
    found = _scored(analyzer, "She was prescribed metformin for type 2 diabetes.")
    assert {"MEDICAL:metformin"} <= set(found)
