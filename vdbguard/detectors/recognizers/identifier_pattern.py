"""A user's ``[[identifiers]]`` patterns, as Presidio would build them from its ad-hoc JSON."""

from __future__ import annotations

from presidio_analyzer import Pattern, PatternRecognizer

from vdbguard.detectors.validators import CHECKSUMS
from vdbguard.identifiers import Identifier


class IdentifierPatternRecognizer(PatternRecognizer):
    """Presidio's ``PatternRecognizer`` (its regex flags, its context rule), with the identifier's named checksum as
    ``validate_result``: a match that passes scores 1.0, one that fails is dropped."""

    def __init__(self, identifier: Identifier) -> None:
        self.checksum = CHECKSUMS[identifier.validator] if identifier.validator else None
        name = identifier.recognizer_name
        patterns = [Pattern(p.name or f"{name} {i}", p.regex, p.score) for i, p in enumerate(identifier.patterns or ())]
        super().__init__(
            supported_entity=str(identifier.pii_type), name=name, patterns=patterns, context=identifier.context or None
        )

    def validate_result(self, pattern_text: str) -> bool | None:
        return None if self.checksum is None else self.checksum(pattern_text)
