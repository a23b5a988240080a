"""Presidio's pattern recognizer for recognizers that are only settings, declared once as class attributes."""

from __future__ import annotations

from typing import ClassVar

from presidio_analyzer import Pattern, PatternRecognizer


class DeclaredPatternRecognizer(PatternRecognizer):
    """A subclass names its entity, patterns, context words and deny list; its class name is the recognizer's name."""

    ENTITY: ClassVar[str]
    PATTERNS: ClassVar[tuple[Pattern, ...]] = ()
    CONTEXT: ClassVar[tuple[str, ...]] = ()
    DENY_LIST: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        super().__init__(
            supported_entity=self.ENTITY,
            name=type(self).__name__,
            patterns=list(self.PATTERNS) or None,
            context=list(self.CONTEXT) or None,
            deny_list=list(self.DENY_LIST) or None,
        )
