"""Card numbers: any 12 to 19 digits that pass Presidio's own Luhn check."""

from __future__ import annotations

from presidio_analyzer import Pattern
from presidio_analyzer.predefined_recognizers import CreditCardRecognizer

# a run of digits grouped by single spaces or dashes, not part of a longer run: "4111-1111-1111-1111-column" holds one
DIGIT_GROUPS = r"(?<![\w.])(?<!\d[ -])\d(?:[ -]?\d){{{low},{high}}}(?![ -]?\d)"


class LuhnCardRecognizer(CreditCardRecognizer):
    """Presidio's card recognizer (its Luhn check on the digits, spaces and dashes dropped) over any 12 to 19 digits:
    its own pattern knows only older issuer ranges and missed every Mastercard 2-series and Maestro number."""

    PATTERNS = (Pattern("luhn-digits", DIGIT_GROUPS.format(low=11, high=18), 0.5),)
    CONTEXT = ("card", "credit", "debit", "visa", "mastercard", "amex", "maestro", "cc", "payment", "charged")

    def __init__(self) -> None:
        super().__init__(patterns=list(self.PATTERNS), context=list(self.CONTEXT), name="LuhnCardRecognizer")
