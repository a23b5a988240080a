"""Cards by Presidio's own Luhn check over any 12 to 19 digits, where Presidio's issuer ranges miss today's cards."""

from __future__ import annotations

from presidio_analyzer.predefined_recognizers import CreditCardRecognizer

from vdbguard.detectors.recognizers.luhn_card import LuhnCardRecognizer


def _found(recognizer, text: str) -> list[str]:
    return [text[r.start : r.end] for r in recognizer.analyze(text, ["CREDIT_CARD"]) if r.score > 0]


def test_a_2_series_mastercard_and_a_maestro_are_found_where_presidios_own_pattern_misses_one() -> None:
    text = "paid with 2223 0031 2200 3222, then 6759-6498-2643-8453 for the rest"
    assert _found(LuhnCardRecognizer(), text) == ["2223 0031 2200 3222", "6759-6498-2643-8453"]
    assert len(_found(CreditCardRecognizer(), text)) < 2


def test_digits_that_fail_the_checksum_or_run_on_are_no_card() -> None:
    recognizer = LuhnCardRecognizer()
    assert _found(recognizer, "ref 2223 0031 2200 3223 is a typo") == []
    assert _found(recognizer, "4111-1111-1111-1111-2222-3333-4444") == [], "part of a longer run"
    assert recognizer.name == "LuhnCardRecognizer"
