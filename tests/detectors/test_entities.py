"""Presidio's entity names read as vdbguard's types: built-in, a user's own, or not reported."""

from __future__ import annotations

from vdbguard.detectors.entities import ENTITIES, pii_type_of
from vdbguard.pii import CustomType, PiiType


def test_entities_map_to_types_and_the_analyzer_is_asked_for_dates_not_birth_dates() -> None:
    assert pii_type_of("IBAN_CODE") is PiiType.ACCOUNT_NUMBER and pii_type_of("NAME_GAZETTEER") is PiiType.PERSON
    assert pii_type_of("PASSPORT") is PiiType.PASSPORT
    assert pii_type_of("CUSTOM:EMPLOYEE_ID") == CustomType("CUSTOM:EMPLOYEE_ID")
    assert pii_type_of("URL") is None and pii_type_of("DATE_TIME") is None
    assert "DATE_TIME" in ENTITIES and "DATE_OF_BIRTH" not in ENTITIES and sorted(ENTITIES) == ENTITIES
