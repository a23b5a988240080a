"""US social security numbers written as nine bare digits, near an SSN word."""

from __future__ import annotations

from presidio_analyzer import Pattern

from vdbguard.detectors.recognizers.declared import DeclaredPatternRecognizer


class UndashedSsnRecognizer(DeclaredPatternRecognizer):
    """Presidio's ``UsSsnRecognizer`` reads dashed and spaced numbers; nine bare digits count only with context."""

    ENTITY = "US_SSN"
    PATTERNS = (Pattern("ssn-9-digits", r"\b\d{9}\b", 0.3),)
    CONTEXT = ("ssn", "social", "security")
