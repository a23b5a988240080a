"""Checksums and shapes that say whether a text may hold a PII type, whatever the PII detector concluded.

The detector's "no" is not evidence of absence: spaCy misses names, and a card number without its context
words scores below the cut-off. Severity is lowered on a detector "no" only where these validators agree that
the text lacks the type (``may_hold`` is False). They err towards "may hold": a kept severity costs a look, a
lowered one hides a leak.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from vdbguard.detectors.lexicon import ordinary_words
from vdbguard.pii import PiiType

_DIGIT_RUN = re.compile(r"(?<![\w-])\d(?:[ -]?\d){6,33}(?![\w-])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b")
_ACCOUNT_CONTEXT = re.compile(r"(?i)\b(account|acct|a/c|iban|routing|sort code|bank|checking|savings|deposit)\b")
_SSN = re.compile(r"\b(?!000|666|9\d\d)\d{3}([- ]?)(?!00)\d{2}\1(?!0000)\d{4}\b")
_SSN_CONTEXT = re.compile(r"(?i)\b(ssn|social security|tax id|taxpayer)\b")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_DATE = re.compile(
    r"(?i)\b(\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}"
    r"(?:st|nd|rd|th)?,? \d{4}|\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
    r"[a-z]*,? \d{4})\b"
)
_STREET = re.compile(
    r"(?i)\b\d+[a-z]? (?:[a-z]+ ){0,4}(?:street|st|road|rd|avenue|ave|lane|ln|drive|dr|boulevard|blvd|court|ct|way|"
    r"place|pl|terrace|square|sq|highway|hwy|parkway|pkwy|circle|cir)\b|\b\d{5}(?:-\d{4})?\b|\bp\.?o\.? box\b|"
    r"\b[A-Z]{1,2}\d[A-Z\d]? ?\d[A-Z]{2}\b"
)
_PLACEHOLDER = re.compile(r"<[A-Z_]+>|\[[A-Z_ ]+\]|\{\{?[A-Z_]+\}?\}")
_TOKEN = re.compile(r"[^\W\d_][\w'’-]*")
_SENTENCE_END = re.compile(r"[.!?:;]\s*$|^\s*$")
# national formats read (a number with +country is read by any); more than the detector reads, which pays per text
PHONE_REGIONS = ("US", "GB", "DE", "FR", "IN", "CA", "AU", "IL", "BR", "MX", "ES", "IT", "NL", "PL", "JP")
_HONORIFIC = re.compile(r"\b(?i:mr|mrs|ms|miss|mx|dr|prof|sir|dame)\b\.? +[A-Z][a-z]")


def luhn_valid(digits: str) -> bool:
    """The card-number checksum: every second digit from the right doubled."""
    if not digits.isdigit():
        return False
    total = 0
    for position, digit in enumerate(reversed(digits)):
        value = int(digit) * (2 if position % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def iban_valid(iban: str) -> bool:
    """ISO 13616: the country code and check digits moved to the end, letters as numbers, mod 97 is 1."""
    compact = iban.replace(" ", "").upper()
    if not re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{11,30}", compact):
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def aba_routing_valid(digits: str) -> bool:
    """An American bank routing number: weights 3, 7, 1 over nine digits, sum divisible by 10."""
    if len(digits) != 9 or not digits.isdigit() or digits == "0" * 9:
        return False
    return sum(int(d) * w for d, w in zip(digits, (3, 7, 1) * 3, strict=True)) % 10 == 0


_VERHOEFF_MULTIPLY = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 4, 0, 6, 7, 8, 9, 5), (2, 3, 4, 0, 1, 7, 8, 9, 5, 6),
    (3, 4, 0, 1, 2, 8, 9, 5, 6, 7), (4, 0, 1, 2, 3, 9, 5, 6, 7, 8), (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
    (6, 5, 9, 8, 7, 1, 0, 4, 3, 2), (7, 6, 5, 9, 8, 2, 1, 0, 4, 3), (8, 7, 6, 5, 9, 3, 2, 1, 0, 4),
    (9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
)  # fmt: skip
_VERHOEFF_PERMUTE = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 5, 7, 6, 2, 8, 3, 0, 9, 4), (5, 8, 0, 3, 7, 9, 6, 1, 4, 2),
    (8, 9, 1, 6, 0, 4, 3, 5, 2, 7), (9, 4, 5, 3, 1, 2, 6, 8, 7, 0), (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
    (2, 7, 9, 3, 8, 0, 6, 4, 1, 5), (7, 0, 4, 6, 9, 1, 3, 2, 5, 8),
)  # fmt: skip


def verhoeff_valid(digits: str) -> bool:
    """The dihedral-group checksum (Aadhaar numbers and many national ids): catches every single-digit error and
    every swap of neighbours, which Luhn misses for 09/90."""
    if not digits.isdigit():
        return False
    check = 0
    for position, digit in enumerate(reversed(digits)):
        check = _VERHOEFF_MULTIPLY[check][_VERHOEFF_PERMUTE[position % 8][int(digit)]]
    return check == 0


CHECKSUMS: dict[str, Callable[[str], bool]] = {
    "luhn": lambda match: luhn_valid(re.sub(r"\D", "", match)),
    "iban": iban_valid,
    "aba_routing": lambda match: aba_routing_valid(re.sub(r"\D", "", match)),
    "verhoeff": lambda match: verhoeff_valid(re.sub(r"\D", "", match)),
}
"""The checksums a user's identifier may name (``validator = "luhn"``), each given the text its pattern matched: the
digit checksums read its digits (an id's "MBR-" prefix and its spaces are not part of the number), IBAN all of it."""


def _digit_runs(text: str) -> list[str]:
    return [re.sub(r"[ -]", "", match.group()) for match in _DIGIT_RUN.finditer(text)]


def _card(text: str) -> bool:
    return any(13 <= len(run) <= 19 and luhn_valid(run) for run in _digit_runs(text))


def _account(text: str) -> bool:
    if any(iban_valid(match.group()) for match in _IBAN.finditer(text)):
        return True
    if not _ACCOUNT_CONTEXT.search(text):
        return False
    return any(6 <= len(run) <= 17 or aba_routing_valid(run) for run in _digit_runs(text))


def _ssn(text: str) -> bool:
    if any(match.group(1) for match in _SSN.finditer(text)):
        return True
    return bool(_SSN_CONTEXT.search(text)) and any(_SSN.fullmatch(run) for run in _digit_runs(text))


def _phone(text: str) -> bool:
    import phonenumbers

    valid = phonenumbers.Leniency.VALID
    return any(any(True for _ in phonenumbers.PhoneNumberMatcher(text, region, valid)) for region in PHONE_REGIONS)


def _person(text: str) -> bool:
    """A name may be here: an honorific before a capitalised word, or a capitalised word that neither starts a
    sentence nor is an ordinary English word (calendar names, "I", "Security")."""
    if _HONORIFIC.search(text):
        return True
    plain = _PLACEHOLDER.sub(". ", text)
    for match in _TOKEN.finditer(plain):
        word = match.group()
        if not word[0].isupper() or word.isupper() or word.lower() in ordinary_words():
            continue  # acronyms (SSN, HR) name nobody
        if not _SENTENCE_END.search(plain[: match.start()]):
            return True
    return False


def _medical(text: str) -> bool:
    lowered = text.lower()
    return any(re.search(rf"\b{re.escape(term)}\b", lowered) for term in _medical_terms())


@lru_cache(maxsize=1)
def _medical_terms() -> tuple[str, ...]:
    from vdbguard.data.medical import CONDITIONS, DRUGS

    return tuple(term.lower() for term in (*CONDITIONS, *DRUGS))


VALIDATORS: dict[PiiType, Callable[[str], bool]] = {
    PiiType.CREDIT_CARD: _card,
    PiiType.ACCOUNT_NUMBER: _account,
    PiiType.SSN: _ssn,
    PiiType.EMAIL: lambda text: bool(_EMAIL.search(text)),
    PiiType.PHONE: _phone,
    PiiType.DATE_OF_BIRTH: lambda text: bool(_DATE.search(text)),
    PiiType.ADDRESS: lambda text: bool(_STREET.search(text)),
    PiiType.PERSON: _person,
    PiiType.MEDICAL: _medical,
}


def may_hold(pii_type: PiiType, text: str) -> bool:
    """Whether ``text`` may hold ``pii_type`` by its checksums and shapes alone; True for a type with no validator."""
    validator = VALIDATORS.get(pii_type)
    return True if validator is None else validator(text)
