"""Secrets (API keys, tokens, private keys, passwords), by ``vdbguard.detectors.secrets`` (detect-secrets' plugins)."""

from __future__ import annotations

from typing import Any

from presidio_analyzer import EntityRecognizer, RecognizerResult

from vdbguard.detectors.entities import SECRET_ENTITY
from vdbguard.detectors.secrets import find_secrets


class SecretsRecognizer(EntityRecognizer):
    """A Presidio recognizer, so every place that reads text for PII (stored text, recovered text, redaction) reads
    it for secrets too."""

    def __init__(self) -> None:
        super().__init__(supported_entities=[SECRET_ENTITY], name="SecretsRecognizer")

    def load(self) -> None:
        pass

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
        found = {}
        for start, end, kind in find_secrets(text):
            metadata = {RecognizerResult.RECOGNIZER_NAME_KEY: self.name, "secret_type": kind}
            found.setdefault(
                (start, end), RecognizerResult(SECRET_ENTITY, start, end, 0.9, recognition_metadata=metadata)
            )
        return list(found.values())
