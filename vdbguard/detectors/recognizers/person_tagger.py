"""The learned PERSON tagger as a recognizer in Presidio's registry (``vdbguard.detectors.tagger`` is the model)."""

from __future__ import annotations

from typing import Any

from presidio_analyzer import EntityRecognizer, RecognizerResult

from vdbguard.detectors.tagger import PersonTagger

# a name is the tagger's call, scored as spaCy's NER scores its own: the mean probability moves in the second decimal
# with the other texts of its batch (bfloat16 sums), and a text's findings must not depend on its neighbours
SCORE = 0.85


class PersonTaggerRecognizer(EntityRecognizer):
    """Names by ``tagger``: a text the tagger prepared in a batch (``PersonTagger.prepare``) answers from it, any
    other is tagged alone."""

    def __init__(self, tagger: PersonTagger) -> None:
        super().__init__(supported_entities=["PERSON"], name="PersonTaggerRecognizer")
        self.tagger = tagger

    def load(self) -> None:
        pass

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
        metadata = {
            RecognizerResult.RECOGNIZER_NAME_KEY: self.name,
            RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id,
        }
        return [
            RecognizerResult("PERSON", start, end, SCORE, recognition_metadata=dict(metadata))
            for start, end, _ in self.tagger.tagged(text).names
        ]
