"""IBANs by checksum: the longest valid prefix of a run, so a word glued after one does not hide it."""

from __future__ import annotations

from vdbguard.detectors.recognizers.iban import ChecksumIbanRecognizer


def _found(text: str) -> list[str]:
    return [text[r.start : r.end] for r in ChecksumIbanRecognizer().analyze(text, ["IBAN_CODE"])]


def test_an_iban_is_found_with_and_without_spaces_and_before_a_capitalised_word() -> None:
    assert _found("to DE89 3704 0044 0532 0130 00 today") == ["DE89 3704 0044 0532 0130 00"]
    assert _found("send GB82WEST12345698765432 NOW please") == ["GB82WEST12345698765432"]


def test_a_run_whose_check_digits_fail_is_no_iban() -> None:
    assert _found("to DE88 3704 0044 0532 0130 00 today") == []
    assert _found("ISO 9001 AB12 certified") == []
