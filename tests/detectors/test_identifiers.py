"""Identifiers users define (issue #45 item 3) and the predefined types the detector gained: each kind of recognizer
on planted values, beside near misses that must not match."""

from __future__ import annotations

import pickle

import pytest
from pydantic import ValidationError

from vdbguard.detectors import detector_identity, load_detector
from vdbguard.detectors.presidio import PresidioDetector
from vdbguard.detectors.shared import DetectorWorker, ProcessSharedDetector
from vdbguard.detectors.validators import luhn_valid, verhoeff_valid
from vdbguard.identifiers import DetectorSettings
from vdbguard.pii import CustomType, PiiType


def checked(entity: str, regex: str, validator: str) -> dict:
    return {"supported_entity": entity, "patterns": [{"regex": regex, "score": 0.5}], "validator": validator}


SETTINGS = {
    "identifiers": [
        {
            "supported_entity": "EMPLOYEE_ID",
            "patterns": [{"name": "employee id", "regex": r"\bEMP-\d{6}\b", "score": 0.3}],
            "context": ["employee", "staff"],
            "allow_list": ["EMP-000000"],
            "severity": "high",
        },
        checked("MEMBER_NO", r"\bMBR-\d{8}\b", "luhn"),
        checked("CITIZEN_NO", r"\bCZ\d{7}\b", "verhoeff"),
        checked("ROUTING", r"\b\d{9}\b", "aba_routing"),
        checked("PARTNER_IBAN", r"\bGB\d\d(?: ?[A-Z0-9]{4}){4} ?\d\d\b", "iban"),
        {"supported_entity": "CODENAME", "deny_list": ["Project Nightingale", "Bluebird"]},
    ],
    "allow_lists": [
        {"supported_entity": "EMAIL", "allow_list": ["support@example.com"]},
        {"supported_entity": "PHONE", "allow_list": [r"^\(212\) 555-01\d\d$"], "allow_list_match": "regex"},
    ],
}


@pytest.fixture(scope="module")
def custom() -> PresidioDetector:
    return PresidioDetector(settings=DetectorSettings.model_validate(SETTINGS))


@pytest.fixture(scope="module")
def plain() -> PresidioDetector:
    return PresidioDetector()


def found(detector: PresidioDetector, text: str, pii_type: str) -> list[str]:
    return [d.value for d in detector.detect(text) if d.pii_type == pii_type]


def with_check_digit(digits: str, valid) -> str:
    return next(digits + d for d in "0123456789" if valid(digits + d))


def test_a_regex_with_context_counts_only_beside_its_context_and_never_on_its_allow_list(custom) -> None:
    employee = CustomType("CUSTOM:EMPLOYEE_ID")
    (detection,) = [d for d in custom.detect("Employee EMP-482913 asked for a laptop.") if d.pii_type == employee]
    assert detection.value == "EMP-482913" and detection.score == pytest.approx(0.65), "0.3 and context's 0.35"
    assert detection.recognizer == "EmployeeIdRecognizer" and isinstance(detection.pii_type, CustomType)
    assert found(custom, "Ticket EMP-482913 closed.", employee) == [], "no context word: 0.3 is under 0.4"
    assert found(custom, "Employee EMP-48291 and EMP-4829130 left.", employee) == [], "five or seven digits"
    assert found(custom, "Staff account EMP-000000 is the test user.", employee) == [], "on its allow list"
    assert found(custom, "Staff: emp-482913.", employee) == ["emp-482913"], "Presidio matches ignoring case"


@pytest.mark.parametrize(
    ("pii_type", "valid", "invalid"),
    [
        ("MEMBER_NO", "MBR-" + with_check_digit("7992739", luhn_valid), None),
        ("CITIZEN_NO", "CZ" + with_check_digit("142857", verhoeff_valid), None),
        ("ROUTING", "021000021", "021000022"),
        ("PARTNER_IBAN", "GB82 WEST 1234 5698 7654 32", "GB82 WEST 1234 5698 7654 33"),
    ],
)
def test_a_regex_with_a_validator_counts_only_when_the_checksum_passes(
    custom, pii_type: str, valid: str, invalid: str | None
) -> None:
    if invalid is None:  # the valid number with its last digit changed
        invalid = valid[:-1] + str((int(valid[-1]) + 1) % 10)
    custom_type = CustomType.named(pii_type)
    hits = [d for d in custom.detect(f"Reference {valid} on file.") if d.pii_type == custom_type]
    assert [(d.value, d.score) for d in hits] == [(valid, 1.0)], "a passing checksum scores 1.0, as in Presidio"
    assert found(custom, f"Reference {invalid} on file.", custom_type) == []


def test_a_deny_list_finds_its_phrases_in_any_case_and_only_whole(custom) -> None:
    codename = CustomType("CUSTOM:CODENAME")
    text = "Budget for project nightingale; the BLUEBIRD pilot, and Project-Nightingale again."
    assert found(custom, text, codename) == ["project nightingale", "BLUEBIRD", "Project-Nightingale"]
    for miss in ("Florence Nightingale wrote it.", "Two bluebirds sang.", "Project Nightingales ended."):
        assert found(custom, miss, codename) == [], miss
    recovered = "needs nightingale project bluebird refund"  # inversion's word soup: single words still count
    assert found(custom, recovered, codename) == ["bluebird"]


def test_allow_lists_per_type_follow_presidios_exact_and_regex_rules(custom, plain) -> None:
    text = "Write to support@example.com or dana@example.org, or call (212) 555-0142."
    assert set(found(plain, text, PiiType.EMAIL)) == {"support@example.com", "dana@example.org"}
    assert found(custom, text, PiiType.EMAIL) == ["dana@example.org"]
    assert found(custom, "Write to Support@Example.com.", PiiType.EMAIL) == ["Support@Example.com"], "exact: as written"
    assert found(plain, text, PiiType.PHONE) and not found(custom, text, PiiType.PHONE), "regex: (212) 555-01xx"
    assert found(custom, "Call (415) 555-0142 now.", PiiType.PHONE), "only what the regex allows"


@pytest.mark.parametrize(
    ("pii_type", "planted", "value", "near_misses"),
    [
        (PiiType.IP_ADDRESS, "The login came from 203.0.113.77 at night.", "203.0.113.77",
         ["Version 10.4.2 shipped.", "Build 999.12.1.4 failed.", "We met at 10:30:15."]),
        (PiiType.IP_ADDRESS, "Blocked 2001:db8:85a3::8a2e:370:7334 today.", "2001:db8:85a3::8a2e:370:7334", []),
        (PiiType.PASSPORT, "Her passport number is 912803456.", "912803456",
         ["Order 912803456 shipped.", "The US team shipped order 912803456."]),
        (PiiType.DRIVER_LICENSE, "UK driving licence MORGA753116SM9IJ, expires 2031.", "MORGA753116SM9IJ",
         ["Serial MORGA753116SM9IJ failed."]),
        (PiiType.NATIONAL_ID, "National insurance number: AB 12 34 56 C.", "AB 12 34 56 C", ["Code AB 12 34 56 C."]),
        (PiiType.NATIONAL_ID, "His NHS number is 943 476 5919.", "943 476 5919", ["Call 943 476 5919 today."]),
        (PiiType.NATIONAL_ID, "Aadhaar 2345 6789 0124 is linked.", "2345 6789 0124",
         ["Account 2345 6789 0124 is linked."]),
        (PiiType.SECRET, "Use postgres://admin:Pa$$w0rd!@db.example.com:5432/app to connect.", "Pa$$w0rd!",
         ["See https://medium.com/@dana/post and https://dana@example.com/x."]),
    ],
)  # fmt: skip
def test_each_newly_enabled_predefined_type_is_found_where_planted_and_not_in_near_misses(
    plain, pii_type: PiiType, planted: str, value: str, near_misses: list[str]
) -> None:
    assert value in found(plain, planted, pii_type), plain.detect(planted)
    for miss in near_misses:
        assert found(plain, miss, pii_type) == [], miss


def test_a_password_in_a_url_is_a_secret_and_never_half_of_an_email(plain) -> None:
    detections = plain.detect("connect with postgres://admin:Pa$$w0rd!@db.example.com:5432/app")
    assert [(d.pii_type, d.value) for d in detections] == [(PiiType.SECRET, "Pa$$w0rd!")]


def test_other_identifiers_are_another_detector_identity_and_travel_with_the_detector(custom, plain) -> None:
    settings = custom.settings
    assert settings is not None
    assert plain.identity() == detector_identity() == ["presidio", PresidioDetector.version]
    assert custom.identity() == detector_identity("presidio", settings) != plain.identity()
    fewer = DetectorSettings.model_validate({**SETTINGS, "identifiers": SETTINGS["identifiers"][:1]})
    assert detector_identity("presidio", fewer) != custom.identity(), "another identifier list, another key"
    only_custom = DetectorSettings.model_validate({"identifiers": SETTINGS["identifiers"]})
    assert PresidioDetector(settings=only_custom).built_in_identity() == plain.identity(), "the verdict is shared"
    assert custom.built_in_identity() != plain.identity(), "a built-in type's allow list changes its labels"
    assert custom.severities() == {"CUSTOM:EMPLOYEE_ID": "high", "CUSTOM:MEMBER_NO": "medium", "CUSTOM:CITIZEN_NO":
                                   "medium", "CUSTOM:ROUTING": "medium", "CUSTOM:PARTNER_IBAN": "medium",
                                   "CUSTOM:CODENAME": "medium"}  # fmt: skip
    copy = pickle.loads(pickle.dumps(custom))
    assert copy.identity() == custom.identity() and found(copy, "Bluebird", "CUSTOM:CODENAME") == ["Bluebird"]
    shared = load_detector(processes=2, settings=settings)
    assert shared.identity() == custom.identity() and pickle.loads(pickle.dumps(shared)).identity() == shared.identity()


def test_a_worker_process_builds_the_same_identifiers(custom) -> None:
    """Settings reach a detector worker on its first line of input: its answers are this process's."""
    texts = ["Staff badge EMP-482913 for Bluebird.", "Write to support@example.com.", "nothing here"] * 30
    worker = DetectorWorker("presidio", custom.settings)
    try:
        assert worker.await_ready(), "the worker read its settings and built its detector"
        shared = ProcessSharedDetector(PresidioDetector, processes=2, early=worker, settings=custom.settings)
        assert shared.detect_many(texts) == custom.detect_many(texts)
        assert any(d.pii_type == "CUSTOM:CODENAME" for d in worker.read(texts[:1])[0].detections)
    finally:
        worker.stop()


@pytest.mark.parametrize(
    ("settings", "where", "message"),
    [
        ({"detector": {"language": "de"}}, ("detector", "language"), "language 'de' is not supported"),
        ({"identifiers": [{"supported_entity": "X", "supported_language": "fr", "deny_list": ["a"]}]},
         ("identifiers", 0, "supported_language"), "supported languages: en"),
        ({"identifiers": [{"supported_entity": "X", "patterns": [{"regex": "EMP-(", "score": 0.5}]}]},
         ("identifiers", 0, "patterns", 0, "regex"), "regex 'EMP-(' does not compile"),
        ({"identifiers": [{"supported_entity": "X", "patterns": [{"regex": r"\d*", "score": 0.5}]}]},
         ("identifiers", 0, "patterns", 0, "regex"), "matches the empty text"),
        ({"identifiers": [{"supported_entity": "X", "patterns": [{"regex": "a", "score": 0.5}], "validator": "mod97"}]},
         ("identifiers", 0, "validator"), "unknown validator 'mod97'; one of luhn, iban, aba_routing, verhoeff"),
        ({"identifiers": [{"supported_entity": "X", "deny_list": []}]}, ("identifiers", 0, "deny_list"),
         "deny_list is empty"),
        ({"identifiers": [{"supported_entity": "X"}]}, ("identifiers", 0), "give patterns (regexes) or a deny_list"),
        ({"identifiers": [{"supported_entity": "X", "deny_list": ["a"], "validator": "luhn"}]}, ("identifiers", 0),
         "a validator checks what patterns match"),
        ({"identifiers": [{"supported_entity": "email", "deny_list": ["a"]}]}, ("identifiers", 0, "supported_entity"),
         "EMAIL is a built-in type"),
        ({"identifiers": [{"supported_entity": "X", "deny_list": ["a"]}, {"supported_entity": "x", "deny_list": ["b"]}]
          }, ("identifiers",), "identifiers[0] and identifiers[1] both define X"),
        ({"allow_lists": [{"supported_entity": "EMPLOYE_ID", "allow_list": ["a"]}]}, ("allow_lists",),
         "allow_lists[0].supported_entity 'EMPLOYE_ID' is neither a built-in type"),
        ({"allow_lists": [{"supported_entity": "EMAIL", "allow_list": ["(x"], "allow_list_match": "regex"}]},
         ("allow_lists", 0), "allow_list regex '(x' does not compile"),
    ],
)  # fmt: skip
def test_every_mistake_is_refused_at_its_place(settings: dict, where: tuple, message: str) -> None:
    with pytest.raises(ValidationError) as error:
        DetectorSettings.model_validate(settings)
    (problem,) = error.value.errors()
    assert problem["loc"] == where and message in problem["msg"], problem
