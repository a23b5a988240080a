"""The phone recognizer skips texts with too few digits to hold a valid number: the gate must never hide one."""

from __future__ import annotations

import phonenumbers
from phonenumbers import PhoneMetadata
from presidio_analyzer.predefined_recognizers import PhoneRecognizer

from vdbguard.detectors.recognizers.phone import MIN_DIGITS, DigitGatedPhoneRecognizer


def test_no_region_has_a_valid_number_shorter_than_the_gate() -> None:
    regions = phonenumbers.SUPPORTED_REGIONS
    lengths = [PhoneMetadata.metadata_for_region(region).general_desc.possible_length for region in regions]
    lengths += [
        PhoneMetadata.metadata_for_nongeo_region(code).general_desc.possible_length
        for code in phonenumbers.COUNTRY_CODES_FOR_NON_GEO_REGIONS
    ]
    assert min(min(found) for found in lengths if found) == MIN_DIGITS


def test_the_gated_recognizer_finds_what_presidios_finds() -> None:
    texts = [
        "ring 030 12 34 about the lease",  # a short German number
        "+49 30 123 or +41 44 668 18 00",
        "phone 1-800-356-9377, ask for Ann",
        "call 112 or 1-800-FLOWERS",  # too few digits; letters are no number at this leniency
        "room 12, floor 3",
        "no digits at all",
    ]
    gated, presidio = DigitGatedPhoneRecognizer(), PhoneRecognizer()
    for text in texts:
        found = [(r.start, r.end, r.score) for r in gated.analyze(text, ["PHONE_NUMBER"])]
        assert found == [(r.start, r.end, r.score) for r in presidio.analyze(text, ["PHONE_NUMBER"])], text
    assert gated.name == "PhoneRecognizer"
    assert gated.analyze(texts[0], ["PHONE_NUMBER"])
