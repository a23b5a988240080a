"""Postal addresses by the tagger's address head, as a recognizer in Presidio's registry."""

from __future__ import annotations

from typing import Any

from presidio_analyzer import EntityRecognizer, RecognizerResult

from vdbguard.detectors.tagger import PersonTagger

ENTITY = "STREET_ADDRESS"
SCORE = 0.85  # one score for every address, as for names: a text's findings must not depend on its batch


class AddressTaggerRecognizer(EntityRecognizer):
    """Addresses by ``tagger``'s address head, from the same prepared batch as its names."""

    def __init__(self, tagger: PersonTagger) -> None:
        if tagger.address_head is None:
            raise ValueError("the tagger has no address head: PersonTagger(addresses=...)")
        super().__init__(supported_entities=[ENTITY], name="AddressTaggerRecognizer")
        self.tagger = tagger

    def load(self) -> None:
        pass

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
        metadata = {
            RecognizerResult.RECOGNIZER_NAME_KEY: self.name,
            RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id,
        }
        return [
            RecognizerResult(ENTITY, start, end, SCORE, recognition_metadata=dict(metadata))
            for start, end, _ in self.tagger.tagged(text).addresses
        ]
