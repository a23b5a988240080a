"""The learned PERSON tagger as a recognizer in Presidio's registry (``vdbguard.detectors.tagger`` is the model)."""

from __future__ import annotations

from typing import Any, ClassVar

from presidio_analyzer import EntityRecognizer, RecognizerResult

from vdbguard.detectors.recognizers.results import finding
from vdbguard.detectors.tagger import PersonTagger, Tagged

# a name is the tagger's call, scored as spaCy's NER scores its own: the mean probability moves in the second decimal
# with the other texts of its batch (bfloat16 sums), and a text's findings must not depend on its neighbours
SCORE = 0.85


class PersonTaggerRecognizer(EntityRecognizer):
    """Names by ``tagger``: a text the tagger prepared in a batch (``PersonTagger.prepare``) answers from it, any
    other is tagged alone."""

    entity: ClassVar[str] = "PERSON"

    def __init__(self, tagger: PersonTagger) -> None:
        super().__init__(supported_entities=[self.entity], name=type(self).__name__)
        self.tagger = tagger

    def load(self) -> None:
        pass

    def spans(self, tagged: Tagged) -> list[tuple[int, int, float]]:
        return tagged.names

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
        return [finding(self, self.entity, start, end, SCORE) for start, end, _ in self.spans(self.tagger.tagged(text))]
