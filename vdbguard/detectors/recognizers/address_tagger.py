"""Postal addresses by the tagger's address head, as a recognizer in Presidio's registry."""

from __future__ import annotations

from typing import ClassVar

from vdbguard.detectors.recognizers.person_tagger import PersonTaggerRecognizer
from vdbguard.detectors.tagger import PersonTagger, Tagged

ENTITY = "STREET_ADDRESS"


class AddressTaggerRecognizer(PersonTaggerRecognizer):
    """Addresses by ``tagger``'s address head, from the same prepared batch as its names, scored as names are."""

    entity: ClassVar[str] = ENTITY

    def __init__(self, tagger: PersonTagger) -> None:
        if tagger.address_head is None:
            raise ValueError("the tagger has no address head: PersonTagger(addresses=...)")
        super().__init__(tagger)

    def spans(self, tagged: Tagged) -> list[tuple[int, int, float]]:
        return tagged.addresses
