"""Which recognizers the analyzer holds: Presidio's predefined ones, less those vdbguard replaces, plus vdbguard's
(one class a module in this package), and a user's identifiers as ad-hoc recognizers for each request."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from presidio_analyzer import AnalyzerEngine

from vdbguard.detectors.lexicon import name_gazetteer
from vdbguard.detectors.recognizers.account_number import AccountNumberRecognizer
from vdbguard.detectors.recognizers.deny_list import DenyListRecognizer
from vdbguard.detectors.recognizers.iban import ChecksumIbanRecognizer
from vdbguard.detectors.recognizers.identifier_pattern import IdentifierPatternRecognizer
from vdbguard.detectors.recognizers.identity_document import IdentityDocumentRecognizer
from vdbguard.detectors.recognizers.ip import GatedIpRecognizer
from vdbguard.detectors.recognizers.luhn_card import LuhnCardRecognizer
from vdbguard.detectors.recognizers.medical import MedicalTermRecognizer
from vdbguard.detectors.recognizers.phone import DigitGatedPhoneRecognizer
from vdbguard.detectors.recognizers.secrets import SecretsRecognizer
from vdbguard.detectors.recognizers.titled_name import TitledNameRecognizer
from vdbguard.detectors.recognizers.undashed_ssn import UndashedSsnRecognizer
from vdbguard.detectors.recognizers.url_credentials import UrlCredentialsRecognizer
from vdbguard.detectors.recognizers.word_list import WordListRecognizer
from vdbguard.identifiers import Identifier

GAZETTEER_SCORE = 0.6
# Presidio's recognizers that vdbguard's replace: card issuer ranges that miss today's cards, the phone matcher on
# texts without digits, a greedy IBAN pattern, IPv6 on every text, 8-digit-minimum account numbers
REPLACED = ("CreditCardRecognizer", "PhoneRecognizer", "IbanRecognizer", "IpRecognizer", "UsBankRecognizer")


def register(
    analyzer: AnalyzerEngine, gazetteer: str, tagger: Path | None, addresses: Path | None = None, titles: bool = False
) -> None:
    """vdbguard's recognizers into ``analyzer``'s registry. ``gazetteer``: when a listed name counts
    (``word_list.GAZETTEER_RULES``); ``tagger``: the learned PERSON tagger's folder, which then alone calls a person
    (spaCy's NER keeps its other types); ``addresses``: its address head's folder, which then finds addresses;
    ``titles``: a capitalised word after a personal title is a person."""
    registry = analyzer.registry
    for name in REPLACED:
        registry.remove_recognizer(name)
    ours = [
        MedicalTermRecognizer(),
        WordListRecognizer("NAME_GAZETTEER", "NameGazetteerRecognizer", name_gazetteer(), GAZETTEER_SCORE, gazetteer),
        UndashedSsnRecognizer(),
        SecretsRecognizer(),
        LuhnCardRecognizer(),
        DigitGatedPhoneRecognizer(),
        ChecksumIbanRecognizer(),
        GatedIpRecognizer(),
        IdentityDocumentRecognizer(),  # passports, driving licences, national ids
        UrlCredentialsRecognizer(),
        AccountNumberRecognizer(),
    ]
    if tagger is not None:
        from vdbguard.detectors.recognizers.person_tagger import PersonTaggerRecognizer
        from vdbguard.detectors.tagger import PersonTagger

        for recognizer in registry.recognizers:
            if recognizer.name == "SpacyRecognizer":
                recognizer.supported_entities = [e for e in recognizer.supported_entities if e != "PERSON"]
        model = PersonTagger(tagger, addresses=addresses)
        ours.append(PersonTaggerRecognizer(model))
        if addresses is not None:
            from vdbguard.detectors.recognizers.address_tagger import AddressTaggerRecognizer

            ours.append(AddressTaggerRecognizer(model))
    if titles:
        ours.append(TitledNameRecognizer())
    for recognizer in ours:
        registry.add_recognizer(recognizer)


def for_identifiers(identifiers: Sequence[Identifier]) -> list[Any]:
    """Ad-hoc recognizers for each of a user's identifiers: one for its patterns, one for its deny list."""
    recognizers: list[Any] = []
    for identifier in identifiers:
        if identifier.patterns:
            recognizers.append(IdentifierPatternRecognizer(identifier))
        if identifier.deny_list:
            recognizers.append(DenyListRecognizer(identifier))
    return recognizers
