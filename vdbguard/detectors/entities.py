"""Presidio's entity names and the vdbguard types they report: what the engine asks the analyzer for and how it reads
the answers. Light on purpose: the plugin's class is read for its version on every scan, before any analyzer exists."""

from __future__ import annotations

from vdbguard.pii import CUSTOM_PREFIX, AnyPiiType, CustomType, PiiType

SECRET_ENTITY = "SECRET"
# Presidio's recognizers (presidio_analyzer.predefined_recognizers) by the vdbguard type they find
DOCUMENT_GROUPS: dict[PiiType, tuple[str, ...]] = {
    PiiType.PASSPORT: (
        "UsPassportRecognizer", "UkPassportRecognizer", "InPassportRecognizer", "EsPassportRecognizer",
        "ItPassportRecognizer", "DePassportRecognizer", "KrPassportRecognizer", "PhPassportRecognizer",
        "ZaPassportRecognizer",
    ),
    PiiType.DRIVER_LICENSE: (
        "UsLicenseRecognizer", "UkDrivingLicenceRecognizer", "ItDriverLicenseRecognizer", "DeFuehrerscheinRecognizer",
        "KrDriverLicenseRecognizer", "ZaDriverLicenseRecognizer",
    ),
    PiiType.NATIONAL_ID: (
        "UsItinRecognizer", "UkNinoRecognizer", "NhsRecognizer", "CaSinRecognizer", "SgFinRecognizer",
        "AuTfnRecognizer", "AuMedicareRecognizer", "InAadhaarRecognizer", "InPanRecognizer", "InVoterRecognizer",
        "EsNifRecognizer", "EsNieRecognizer", "ItFiscalCodeRecognizer", "ItIdentityCardRecognizer",
        "PlPeselRecognizer", "FiPersonalIdentityCodeRecognizer", "KrRrnRecognizer", "KrFrnRecognizer",
        "SePersonnummerRecognizer", "ThTninRecognizer", "TrNationalIdRecognizer", "ZaIdNumberRecognizer",
        "NgNinRecognizer", "PhUmidRecognizer", "PhTinRecognizer", "DeTaxIdRecognizer", "DeIdCardRecognizer",
        "DeSocialSecurityRecognizer", "DeHealthInsuranceRecognizer",
    ),
}  # fmt: skip

PRESIDIO_TO_PII: dict[str, PiiType] = {
    "PERSON": PiiType.PERSON,
    "EMAIL_ADDRESS": PiiType.EMAIL,
    "PHONE_NUMBER": PiiType.PHONE,
    "US_SSN": PiiType.SSN,
    "CREDIT_CARD": PiiType.CREDIT_CARD,
    "IBAN_CODE": PiiType.ACCOUNT_NUMBER,
    "US_BANK_NUMBER": PiiType.ACCOUNT_NUMBER,
    "LOCATION": PiiType.ADDRESS,
    "STREET_ADDRESS": PiiType.ADDRESS,
    "DATE_OF_BIRTH": PiiType.DATE_OF_BIRTH,
    "MEDICAL": PiiType.MEDICAL,
    "NAME_GAZETTEER": PiiType.PERSON,
    SECRET_ENTITY: PiiType.SECRET,
    "IP_ADDRESS": PiiType.IP_ADDRESS,
    **{pii_type.value: pii_type for pii_type in DOCUMENT_GROUPS},  # passports, driving licences, national ids
}
# What the analyzer is asked for: the types above (birth dates come as DATE_TIME), so recognizers whose
# results would be dropped anyway (URL, MAC addresses, Presidio's own per-country types) never run.
ENTITIES = sorted({*PRESIDIO_TO_PII, "DATE_TIME"} - {"DATE_OF_BIRTH"})


def pii_type_of(entity: str) -> AnyPiiType | None:
    """The vdbguard type of a Presidio entity: a built-in one, a user's ``CUSTOM:NAME``, or None (not reported)."""
    return CustomType(entity) if entity.startswith(CUSTOM_PREFIX) else PRESIDIO_TO_PII.get(entity)
