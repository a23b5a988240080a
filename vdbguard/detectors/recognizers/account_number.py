"""Bank account numbers: 6 to 17 digits near an account word."""

from __future__ import annotations

from presidio_analyzer import Pattern

from vdbguard.detectors.recognizers.declared import DeclaredPatternRecognizer
from vdbguard.detectors.recognizers.luhn_card import DIGIT_GROUPS


class AccountNumberRecognizer(DeclaredPatternRecognizer):
    """In place of Presidio's ``UsBankRecognizer``, which reads 8 to 17 digits; scored low, so only a context word
    lifts a match over the cut-off."""

    ENTITY = "US_BANK_NUMBER"
    PATTERNS = (Pattern("account-digits", DIGIT_GROUPS.format(low=5, high=16), 0.1),)
    CONTEXT = ("account", "acct", "a/c", "routing", "bank", "checking", "savings", "deposit", "sort", "iban")
