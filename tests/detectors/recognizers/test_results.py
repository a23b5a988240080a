"""Every finding names the recognizer that made it, in a dict of its own."""

from __future__ import annotations

from presidio_analyzer import RecognizerResult

from vdbguard.detectors.recognizers.results import finding
from vdbguard.detectors.recognizers.titled_name import TitledNameRecognizer


def test_a_finding_names_its_recognizer_and_keeps_its_span_and_score() -> None:
    recognizer = TitledNameRecognizer()
    found = finding(recognizer, "PERSON", 4, 12, 0.8)
    assert (found.entity_type, found.start, found.end, found.score) == ("PERSON", 4, 12, 0.8)
    assert found.recognition_metadata == {
        RecognizerResult.RECOGNIZER_NAME_KEY: "TitledNameRecognizer",
        RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: recognizer.id,
    }


def test_findings_never_share_their_metadata() -> None:
    """Presidio's context enhancer writes into a result's metadata: one finding's flag must not reach another's."""
    recognizer = TitledNameRecognizer()
    first, second = finding(recognizer, "PERSON", 0, 3, 0.8), finding(recognizer, "PERSON", 5, 9, 0.8)
    first.recognition_metadata[RecognizerResult.IS_SCORE_ENHANCED_BY_CONTEXT_KEY] = True
    assert RecognizerResult.IS_SCORE_ENHANCED_BY_CONTEXT_KEY not in second.recognition_metadata
