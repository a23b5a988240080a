"""Identifiers users define, through real scans: a job file's [[identifiers]] and `scan --identifiers FILE` on an
embedded Chroma store, reported as types of their own, masked, in stored-text and vector findings alike."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import chroma_store_table
from vdbguard.cli import main
from vdbguard.records import VectorRecord
from vdbguard.reports.schema import Finding, Report

TEXTS = {
    "emp": "Employee EMP-482913 asked for a new laptop.",
    "codename": "Adjuster visit scheduled for the claim.",  # a code name the small inverter's vocabulary holds
    "allowed": "Staff test account EMP-000000 was reset.",
    "ticket": "Ticket EMP-482913 closed.",  # no context word: not an employee id
    "clean": "The printer on the third floor jams again.",
}
IDENTIFIERS_TOML = r"""
[[identifiers]]
supported_entity = "EMPLOYEE_ID"
context = ["employee", "staff"]
allow_list = ["EMP-000000"]
severity = "high"
[[identifiers.patterns]]
name = "employee id"
regex = '\bEMP-\d{6}\b'
score = 0.3

[[identifiers]]
supported_entity = "CODENAME"
deny_list = ["Adjuster"]
"""
IDENTIFIERS_YAML = r"""
identifiers:
  - supported_entity: EMPLOYEE_ID
    patterns:
      - {name: employee id, regex: '\bEMP-\d{6}\b', score: 0.3}
    context: [employee, staff]
    severity: high
"""


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, " ".join(result.output.split())  # the console wraps long lines


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:
    from vdbguard.connectors.chroma import ChromaConnector

    path = tmp_path_factory.mktemp("identifiers") / "store"
    vectors = embedder.encode(list(TEXTS.values()))
    records = [VectorRecord(rid, vector, text=text) for (rid, text), vector in zip(TEXTS.items(), vectors, strict=True)]
    with ChromaConnector(collection="notes", path=path, create=True) as connector:
        connector.upsert(records)
    return path


def _job(folder: Path, store: Path, identifiers: str) -> Path:
    job = folder / "job.toml"
    job.write_text(
        f"""
[job]
state = "state.sqlite"
profile = "small"
owner_calibration = "off"
fail_on = "never"

{chroma_store_table(store, "notes", name="notes")}
[output]
dir = "out"
formats = ["json"]
{identifiers}
"""
    )
    return job


def _findings(report: Report, kind: str) -> dict[str, Finding]:
    return {f.record_id: f for f in report.findings if f.kind == kind}


def test_a_job_files_identifiers_are_types_of_their_own_in_stored_text_and_vector_findings(
    store: Path, small_attacks, tmp_path: Path
) -> None:
    job = _job(tmp_path, store, IDENTIFIERS_TOML)
    code, output = run("scan", "--config", str(job))
    assert code == 0, output
    written = (tmp_path / "out" / "notes" / "notes" / "report.json").read_text()
    report = Report.model_validate_json(written)
    stored, vector = _findings(report, "stored_text"), _findings(report, "vector")

    employee = stored["emp"]
    assert "CUSTOM:EMPLOYEE_ID" in employee.pii_types and employee.severity.value == "high", "its own severity"
    (evidence,) = [e for e in employee.evidence if e.pii_type == "CUSTOM:EMPLOYEE_ID"]
    assert evidence.detail == "EmployeeIdRecognizer found CUSTOM:EMPLOYEE_ID in document"
    assert evidence.recovered and "*" in evidence.recovered and "482913" not in written, "masked everywhere"
    for rid in ("allowed", "ticket", "clean"):  # its allow list; no context word; nothing
        assert all("CUSTOM:EMPLOYEE_ID" not in f.pii_types for f in report.findings if f.record_id == rid), rid

    assert stored["codename"].pii_types == ["CUSTOM:CODENAME"] and stored["codename"].severity.value == "medium"
    recovered = [e for e in vector["codename"].evidence if e.pii_type == "CUSTOM:CODENAME"]
    assert "CUSTOM:CODENAME" in vector["codename"].pii_types and recovered, "inversion recovered the code name"
    assert recovered[0].attack == "bag-of-words"
    assert recovered[0].detail == "CodenameRecognizer found CUSTOM:CODENAME in the recovered words"
    assert recovered[0].recovered and "*" in recovered[0].recovered and "adjuster" not in written.lower()
    assert {"CUSTOM:EMPLOYEE_ID", "CUSTOM:CODENAME"} <= set(report.summary.by_pii_type)

    code, output = run("scan", "--config", str(job))
    again = Report.model_validate_json((tmp_path / "out" / "notes" / "notes" / "report.json").read_text())
    assert code == 0 and again.coverage.records_attacked == 0, "the same identifiers: every verdict carried over"
    _job(tmp_path, store, IDENTIFIERS_TOML.replace('allow_list = ["EMP-000000"]\n', ""))
    code, output = run("scan", "--config", str(job))
    changed = Report.model_validate_json((tmp_path / "out" / "notes" / "notes" / "report.json").read_text())
    assert code == 0 and changed.coverage.records_attacked == len(TEXTS), "other identifiers: every record judged again"
    assert "CUSTOM:EMPLOYEE_ID" in _findings(changed, "stored_text")["allowed"].pii_types


def test_scan_identifiers_reads_a_yaml_file_and_the_language_is_english_only(
    store: Path, small_attacks, tmp_path: Path
) -> None:
    identifiers = tmp_path / "identifiers.yaml"
    identifiers.write_text(IDENTIFIERS_YAML)
    flags = ("scan", "--connector", "chroma", "--path", str(store), "--collection", "notes", "--profile", "small")
    code, output = run(*flags, "--identifiers", str(identifiers), "--out", str(tmp_path / "out"), "--format", "json")
    assert code == 1, output  # a high finding fails the default --fail-on high
    report = Report.model_validate_json((tmp_path / "out" / "report.json").read_text())
    assert "CUSTOM:EMPLOYEE_ID" in _findings(report, "stored_text")["emp"].pii_types
    assert "CUSTOM:EMPLOYEE_ID" in _findings(report, "stored_text")["allowed"].pii_types, "no allow list in this file"

    code, output = run(*flags, "--language", "de")
    assert code == 2 and "language 'de' is not supported: supported languages: en" in output, output
    assert "reads English only" in output
    (tmp_path / "job.toml").write_text("[[stores]]\nconnector = 'chroma'\npath = 'x'\ncollections = ['c']\n")
    code, output = run("scan", "--config", str(tmp_path / "job.toml"), "--identifiers", str(identifiers))
    assert code == 2 and "--config holds its own identifiers" in output


def test_an_identifiers_file_names_each_problem_with_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "detector:\n  language: de\nidentifiers:\n  - supported_entity: EMPLOYEE_ID\n    patterns:\n"
        "      - {regex: 'EMP-(', score: 0.3}\n    validator: mod11\n  - supported_entity: CODENAME\n"
        "    deny_list: []\nallow_lists:\n  - {supported_entity: EMPLOYE_ID, allow_list: [x]}\n"
    )
    code, output = run("scan", "--connector", "chroma", "--path", str(tmp_path), "--collection", "c",
                       "--identifiers", str(bad))  # fmt: skip
    assert code == 2 and "has 5 problem(s)" in output, output
    for where, line, expected in (
        ("detector.language", 2, "language 'de' is not supported"),
        ("identifiers[0].patterns[0].regex", 6, "regex 'EMP-(' does not compile"),
        ("identifiers[0].validator", 7, "unknown validator 'mod11'; one of luhn, iban, aba_routing, verhoeff"),
        ("identifiers[1].deny_list", 9, "deny_list is empty"),
        ("allow_lists", 10, "allow_lists[0].supported_entity 'EMPLOYE_ID' is neither a built-in type"),
    ):
        assert re.search(rf"{re.escape(where)} \(line {line}\): {re.escape(expected)}", output), (where, output)
    assert "Traceback" not in output


def test_a_job_files_identifiers_are_checked_with_their_lines(tmp_path: Path) -> None:
    job = tmp_path / "job.toml"
    job.write_text(
        '[detector]\nlanguage = "fr"\n\n[[stores]]\nconnector = "chroma"\npath = "x"\ncollections = ["c"]\n\n'
        '[[identifiers]]\nsupported_entity = "email"\ndeny_list = ["a"]\n\n[[identifiers]]\nsupported_entity = "X"\n'
        "[[identifiers.patterns]]\nregex = '\\d*'\nscore = 0.5\n"
    )
    code, output = run("config", "validate", str(job))
    assert code == 2, output
    for where, line, expected in (
        ("detector.language", 2, "language 'fr' is not supported"),
        ("identifiers[0].supported_entity", 10, "EMAIL is a built-in type"),
        ("identifiers[1].patterns[0].regex", 16, r"regex '\\d*' matches the empty text"),
    ):
        assert re.search(rf"{re.escape(where)} \(line {line}\): {re.escape(expected)}", output), (where, output)


def test_base_severities_of_the_new_types_and_of_a_users_own() -> None:
    from vdbguard.pii import CustomType, PiiType
    from vdbguard.reports.schema import Severity
    from vdbguard.scan.engine import severity_of

    for pii_type in (PiiType.PASSPORT, PiiType.DRIVER_LICENSE, PiiType.NATIONAL_ID):
        assert severity_of({pii_type}, recovered_verbatim=False) is Severity.HIGH, pii_type
    assert severity_of({PiiType.IP_ADDRESS}, recovered_verbatim=False) is Severity.LOW
    own = CustomType("CUSTOM:EMPLOYEE_ID")
    assert severity_of({own}, recovered_verbatim=False) is Severity.MEDIUM, "an identifier's default"
    assert severity_of({own}, recovered_verbatim=False, overrides={own: Severity.HIGH}) is Severity.HIGH
    assert severity_of({own, PiiType.PERSON}, recovered_verbatim=True) is Severity.CRITICAL, "linked, and verbatim"


def test_a_suppression_or_baseline_may_name_a_users_type() -> None:
    from datetime import date

    from pydantic import ValidationError

    from vdbguard.config import Suppression

    accepted = Suppression(
        record_id="r*", pii_type="custom:employee_id", reason="test data", owner="me", expires=date(2999, 1, 1)
    )
    assert accepted.matches("c", "r1", "CUSTOM:EMPLOYEE_ID") and not accepted.matches("c", "r1", "PERSON")
    assert Suppression(record_id="r", pii_type="person", reason="x", owner="me", expires=date.max).pii_type == "PERSON"
    with pytest.raises(ValidationError, match="unknown PII type 'persn'"):
        Suppression(record_id="r", pii_type="persn", reason="x", owner="me", expires=date.max)


def test_the_detector_named_in_a_job_file_scans_and_a_misspelt_one_is_refused(
    store: Path, small_attacks, tmp_path: Path
) -> None:
    """``[detector] name`` picks the detector plugin (version 5 stays selectable); the report names it, a change of
    detector judges every record again, and a misspelt name is refused like any field."""
    job = _job(tmp_path, store, '[detector]\nname = "presidio-sm"\n')
    code, output = run("scan", "--config", str(job))
    written = tmp_path / "out" / "notes" / "notes" / "report.json"
    assert code == 0 and Report.model_validate_json(written.read_text()).detector == "presidio-sm 5", output
    _job(tmp_path, store, "")
    code, output = run("scan", "--config", str(job))
    default = Report.model_validate_json(written.read_text())
    assert code == 0 and default.detector == "presidio 17", output
    assert default.coverage.records_attacked == len(TEXTS), "another detector: every record judged again"

    job.write_text(
        '[detector]\nname = "presidio-sn"\n\n[[stores]]\nconnector = "chroma"\npath = "x"\ncollections = ["c"]\n'
    )
    code, output = run("config", "validate", str(job))
    assert code == 2 and re.search(r"detector\.name \(line 2\): unknown detector 'presidio-sn'", output), output
    assert "did you mean presidio-sm" in output, output
