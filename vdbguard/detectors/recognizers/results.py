"""A recognizer's finding with the metadata Presidio's explanations read: which recognizer made it."""

from __future__ import annotations

from presidio_analyzer import EntityRecognizer, RecognizerResult


def finding(recognizer: EntityRecognizer, entity: str, start: int, end: int, score: float) -> RecognizerResult:
    metadata = {
        RecognizerResult.RECOGNIZER_NAME_KEY: recognizer.name,
        RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: recognizer.id,
    }
    return RecognizerResult(entity, start, end, score, recognition_metadata=metadata)
