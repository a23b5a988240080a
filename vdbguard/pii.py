"""The PII types vdbguard reasons about, and how bad each one is to leak."""

from __future__ import annotations

from enum import StrEnum


class PiiType(StrEnum):
    PERSON = "PERSON"
    EMAIL = "EMAIL"
    PHONE = "PHONE"
    SSN = "SSN"
    ADDRESS = "ADDRESS"
    DATE_OF_BIRTH = "DATE_OF_BIRTH"
    MEDICAL = "MEDICAL"
    CREDIT_CARD = "CREDIT_CARD"
    ACCOUNT_NUMBER = "ACCOUNT_NUMBER"
    SECRET = "SECRET"  # API keys, tokens, private keys, passwords: always masked, even with --show-pii


PROBED_TYPES: tuple[PiiType, ...] = (
    PiiType.PERSON,
    PiiType.EMAIL,
    PiiType.PHONE,
    PiiType.SSN,
    PiiType.ADDRESS,
    PiiType.DATE_OF_BIRTH,
    PiiType.MEDICAL,
    PiiType.CREDIT_CARD,
    PiiType.ACCOUNT_NUMBER,
)
