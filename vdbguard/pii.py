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
    IP_ADDRESS = "IP_ADDRESS"
    PASSPORT = "PASSPORT"
    DRIVER_LICENSE = "DRIVER_LICENSE"
    NATIONAL_ID = "NATIONAL_ID"  # a state's number for a person: tax, insurance, health or identity-card number


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
# Types only the PII detector finds: no probe or stacked verdict was trained on them, and the corpus holds none
DETECTED_ONLY_TYPES: tuple[PiiType, ...] = (
    PiiType.IP_ADDRESS,
    PiiType.PASSPORT,
    PiiType.DRIVER_LICENSE,
    PiiType.NATIONAL_ID,
)

CUSTOM_PREFIX = "CUSTOM:"


class CustomType(str):
    """A type a user defined (a job's ``[[identifiers]]``), written ``CUSTOM:NAME`` in reports.

    Not a PiiType member: the enum is what vdbguard's attacks and corpus know, and a user's types come and go
    with their job file. It reads like one (``.value``, ``str()``) wherever a finding names its types."""

    __slots__ = ()

    def __new__(cls, value: str) -> CustomType:
        if not value.startswith(CUSTOM_PREFIX) or len(value) == len(CUSTOM_PREFIX):
            raise ValueError(f"{value!r} is not a custom type ({CUSTOM_PREFIX}NAME)")
        return super().__new__(cls, value)

    @classmethod
    def named(cls, name: str) -> CustomType:
        return cls(CUSTOM_PREFIX + name)

    @property
    def value(self) -> str:
        return str(self)

    @property
    def name(self) -> str:
        return self[len(CUSTOM_PREFIX) :]


AnyPiiType = PiiType | CustomType


def pii_type_of(value: str) -> AnyPiiType:
    """A type as reports and the state write it: a built-in PiiType, or a user's ``CUSTOM:NAME``."""
    return CustomType(value) if value.startswith(CUSTOM_PREFIX) else PiiType(value)


def detected_only(pii_type: str) -> bool:
    """Whether only the detector can judge ``pii_type``: a user's type, or a built-in one no probe learned."""
    return pii_type.startswith(CUSTOM_PREFIX) or pii_type in DETECTED_ONLY_TYPES
