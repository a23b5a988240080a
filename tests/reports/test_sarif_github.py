"""report.sarif as GitHub code scanning takes it: every documented requirement, checked on the log itself.

The rules are those of docs.github.com, "SARIF support for code scanning" (supported properties, and the
limits under "Validating your SARIF file"); each check below names the one it enforces. A real scan's
SARIF goes through the same checks in tests/test_cli.py.
"""

from __future__ import annotations

import gzip
import json
import re
from typing import Any

import pytest

from tests.reports.test_writers import make_report
from vdbguard.reports import sarif as sarif_module
from vdbguard.reports.sarif import render_sarif
from vdbguard.reports.schema import Severity

LEVELS = {"error", "warning", "note"}
SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
URI_REFERENCE = re.compile(r"^[A-Za-z0-9\-._~/%!$&'()*+,;=:@]+$")  # RFC 3986 characters, '%' only as an escape


def github_severity(score: str) -> str | None:
    """GitHub's reading of a rule's security-severity: over 9.0 critical, 7.0-8.9 high, 4.0-6.9 medium,
    0.1-3.9 low; 0.0 or anything outside the range has none."""
    value = float(score)
    if not 0.0 < value <= 10.0:
        return None
    if value >= 9.0:
        return "critical"
    if value >= 7.0:
        return "high"
    return "medium" if value >= 4.0 else "low"


def _required_text(value: Any) -> bool:
    """Required properties: "You must supply an explicit value for any property marked as required. The empty
    string is not supported for required properties." """
    return isinstance(value, str) and value.strip() != ""


def _rule_problems(rule: dict[str, Any], where: str) -> list[str]:
    problems = []
    # reportingDescriptor.id: required, a unique identifier.
    if not _required_text(rule.get("id")):
        problems.append(f"{where}: id missing")
    # name: optional, "limited to 255 characters".
    if "name" in rule and (not _required_text(rule["name"]) or len(rule["name"]) > 255):
        problems.append(f"{where}: name empty or over 255 characters")
    # shortDescription.text and fullDescription.text: required, "limited to 1024 characters".
    for field in ("shortDescription", "fullDescription"):
        text = rule.get(field, {}).get("text")
        if not _required_text(text) or len(text) > 1024:
            problems.append(f"{where}: {field}.text missing or over 1024 characters")
    # help.text: required; help.markdown: recommended ("displayed instead of help.text").
    if not _required_text(rule.get("help", {}).get("text")):
        problems.append(f"{where}: help.text missing")
    if not _required_text(rule.get("help", {}).get("markdown")):
        problems.append(f"{where}: help.markdown missing")
    # defaultConfiguration.level: "note, warning and error" are the valid values.
    level = rule.get("defaultConfiguration", {}).get("level", "warning")
    if level not in LEVELS:
        problems.append(f"{where}: defaultConfiguration.level {level!r}")
    properties = rule.get("properties", {})
    tags = properties.get("tags", [])
    # properties.tags: strings; "Tags per rule: 20" (more rejects the file); filter "security" needs the tag.
    if not all(isinstance(t, str) and t for t in tags) or len(tags) > 20 or "security" not in tags:
        problems.append(f"{where}: tags {tags!r} (strings, at most 20, 'security' among them)")
    # properties.security-severity: "a string representing a score ... greater than 0.0 up to 10.0" for
    # security rules; any other value "is regarded as having no security severity".
    score = properties.get("security-severity")
    if not isinstance(score, str) or not re.fullmatch(r"\d+(\.\d+)?", score) or github_severity(score) is None:
        problems.append(f"{where}: security-severity {score!r} is not a string score in (0.0, 10.0]")
    return problems


def _location_problems(location: dict[str, Any], where: str) -> list[str]:
    problems = []
    physical = location.get("physicalLocation")
    # location.physicalLocation: required ("At least one location is required for code scanning to
    # display a result"; "will use this property to decide which file to annotate").
    if not isinstance(physical, dict):
        return [f"{where}: no physicalLocation"]
    uri = physical.get("artifactLocation", {}).get("uri")
    # artifactLocation.uri: required; "we recommend that this is a relative path from the root of the
    # GitHub repository"; an absolute URI must share the source root's scheme, so none is used here.
    if not _required_text(uri):
        problems.append(f"{where}: artifactLocation.uri missing")
    elif "://" in uri or uri.startswith("/") or not URI_REFERENCE.match(uri):
        problems.append(f"{where}: artifactLocation.uri {uri!r} is not a relative, encoded URI")
    region = physical.get("region", {})
    # region.startLine, startColumn, endLine, endColumn: required; lines and columns count from 1.
    for field in ("startLine", "startColumn", "endLine", "endColumn"):
        if not isinstance(region.get(field), int) or region[field] < 1:
            problems.append(f"{where}: region.{field} {region.get(field)!r} is not a number >= 1")
    if not problems and (region["endLine"], region["endColumn"]) < (region["startLine"], region["startColumn"]):
        problems.append(f"{where}: region ends before it starts")
    return problems


def _result_problems(result: dict[str, Any], rules: list[dict[str, Any]], where: str) -> list[str]:
    problems = []
    ids = [rule.get("id") for rule in rules]
    # ruleId: "the unique identifier of the rule (reportingDescriptor.id)"; ruleIndex: its index in rules[].
    if result.get("ruleId") not in ids:
        problems.append(f"{where}: ruleId {result.get('ruleId')!r} names no rule")
    index = result.get("ruleIndex")
    points_at_rule = isinstance(index, int) and 0 <= index < len(rules) and ids[index] == result["ruleId"]
    if index is not None and not points_at_rule:
        problems.append(f"{where}: ruleIndex {index!r} does not point at ruleId")
    # level: error, warning or note (the values code scanning filters on).
    if result.get("level", "warning") not in LEVELS:
        problems.append(f"{where}: level {result.get('level')!r}")
    # message.text: required (the alert's title).
    if not _required_text(result.get("message", {}).get("text")):
        problems.append(f"{where}: message.text missing")
    # locations[]: required, "up to a maximum of 10"; only the first is used, and it must be physical.
    locations = result.get("locations")
    if not isinstance(locations, list) or not 1 <= len(locations) <= 10:
        problems.append(f"{where}: locations must hold 1 to 10 locations")
    else:
        problems += _location_problems(locations[0], f"{where}.locations[0]")
    # partialFingerprints: required; "code scanning only uses the primaryLocationLineHash".
    prints = result.get("partialFingerprints")
    if not isinstance(prints, dict) or not all(_required_text(v) for v in prints.values()):
        problems.append(f"{where}: partialFingerprints missing or empty")
    elif not _required_text(prints.get("primaryLocationLineHash")):
        problems.append(f"{where}: partialFingerprints.primaryLocationLineHash missing")
    return problems


def _run_problems(run: dict[str, Any], where: str) -> list[str]:
    problems = []
    driver = run.get("tool", {}).get("driver", {})
    # tool.driver.name: required (results are filtered by tool).
    if not _required_text(driver.get("name")):
        problems.append(f"{where}: tool.driver.name missing")
    # version or semanticVersion ("Semantic Versioning 2.0 format") tracks results across tool versions.
    if not (_required_text(driver.get("version")) or _required_text(driver.get("semanticVersion"))):
        problems.append(f"{where}: tool.driver has no version")
    if "semanticVersion" in driver and not SEMVER.match(driver["semanticVersion"]):
        problems.append(f"{where}: semanticVersion {driver['semanticVersion']!r} is not semantic versioning")
    # informationUri: where the tool is documented (shown with the tool).
    if not str(driver.get("informationUri", "")).startswith("https://"):
        problems.append(f"{where}: tool.driver.informationUri missing")
    rules = driver.get("rules")
    results = run.get("results")
    # tool.driver.rules[] and results[]: required.
    if not isinstance(rules, list) or not isinstance(results, list):
        return [*problems, f"{where}: rules[] or results[] missing"]
    # "Rules per run: 25,000" and "Results per run: 25,000": more rejects the file.
    if len(rules) > 25_000 or len(results) > 25_000:
        problems.append(f"{where}: {len(rules)} rules, {len(results)} results (at most 25,000 each)")
    if len({rule.get("id") for rule in rules}) != len(rules):
        problems.append(f"{where}: rule ids are not unique")
    # runAutomationDetails.id: "category/run-id"; a category per collection, so each keeps its own alerts.
    category = run.get("automationDetails", {}).get("id", "")
    if not _required_text(category) or not category.endswith("/"):
        problems.append(f"{where}: automationDetails.id {category!r} names no category")
    for i, rule in enumerate(rules):
        problems += _rule_problems(rule, f"{where}.rules[{i}]")
    for i, result in enumerate(results):
        problems += _result_problems(result, rules, f"{where}.results[{i}]")
    # Fingerprints "detect when two results are logically identical": distinct records, distinct prints.
    hashes = [r.get("partialFingerprints", {}).get("primaryLocationLineHash") for r in results]
    if len(set(hashes)) != len(hashes):
        problems.append(f"{where}: two results share a primaryLocationLineHash")
    return problems


def github_problems(text: str) -> list[str]:
    """Every way ``text`` (a SARIF log) breaks GitHub code scanning's documented requirements; [] if none."""
    # "For each gzip-compressed SARIF file, SARIF upload supports a maximum size of 10 MB."
    problems = [] if len(gzip.compress(text.encode())) <= 10 * 1024 * 1024 else ["over 10 MB gzip-compressed"]
    log = json.loads(text)
    # sarifLog: $schema, version "2.1.0" (the only one supported) and runs[] are required.
    if not _required_text(log.get("$schema")) or log.get("version") != "2.1.0":
        problems.append("$schema missing or version is not 2.1.0")
    runs = log.get("runs")
    # "Runs per file: 20".
    if not isinstance(runs, list) or not 1 <= len(runs) <= 20:
        return [*problems, "runs[] must hold 1 to 20 runs"]
    for i, run in enumerate(runs):
        problems += _run_problems(run, f"runs[{i}]")
    return problems


def assert_github_accepts(text: str) -> None:
    problems = github_problems(text)
    assert problems == [], "\n".join(problems[:20])


def severity_problems(text: str) -> list[str]:
    """Results whose rule's security-severity GitHub reads as another severity than vdbguard's."""
    run = json.loads(text)["runs"][0]
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    return [
        f"{result['ruleId']}: {result['properties']['severity']} shown as {shown}"
        for result in run["results"]
        if (shown := github_severity(rules[result["ruleId"]]["properties"]["security-severity"]))
        != result["properties"]["severity"]
    ]


@pytest.mark.parametrize("masked", [True, False])
def test_sarif_meets_every_github_code_scanning_requirement(masked: bool) -> None:
    assert_github_accepts(render_sarif(make_report(masked)))


def test_each_result_shows_in_github_with_its_findings_severity() -> None:
    report = make_report()
    high = report.findings[0].model_copy(update={"record_id": "doc-4", "severity": Severity.HIGH})
    text = render_sarif(report.model_copy(update={"findings": [*report.findings, high]}))
    assert severity_problems(text) == []
    rules = [rule["id"] for rule in json.loads(text)["runs"][0]["tool"]["driver"]["rules"]]
    assert "vdbguard/pii/PERSON/critical" in rules and "vdbguard/pii/PERSON/high" in rules


def test_the_physical_location_names_the_collection_stably_and_encoded() -> None:
    from vdbguard.reports.sarif import artifact_uri

    report = make_report()
    odd = report.model_copy(
        update={"target": report.target.model_copy(update={"collection": "team a/notes#1 ü", "connector": "qdrant"})}
    )
    assert artifact_uri(report) == "vdbguard/chroma/notes"
    assert artifact_uri(odd) == "vdbguard/qdrant/team%20a%2Fnotes%231%20%C3%BC"
    assert_github_accepts(render_sarif(odd))
    first, again = json.loads(render_sarif(report)), json.loads(render_sarif(make_report(masked=False)))
    locations = [[r["locations"] for r in log["runs"][0]["results"]] for log in (first, again)]
    assert locations[0] == locations[1]
    logical = [loc[0]["logicalLocations"][0]["fullyQualifiedName"] for loc in locations[0]]
    assert logical == ["chroma://notes/doc-1", "chroma://notes/tenant-a/doc-2", "chroma://notes/doc-3"]
    categories = [json.loads(render_sarif(r))["runs"][0]["automationDetails"]["id"] for r in (report, odd)]
    assert categories == ["vdbguard/chroma/notes/", "vdbguard/qdrant/team a/notes#1 ü/"]  # one per collection


def test_no_recovered_value_is_unmasked_in_sarif_even_with_show_pii() -> None:
    """Code-scanning alerts are read by everyone with access to the repository: PII stays masked there."""
    for masked in (True, False):
        text = render_sarif(make_report(masked))
        assert "John Smith" not in text and "555-0100" not in text and "J*** S****" in text
    run = json.loads(render_sarif(make_report(masked=False)))["runs"][0]
    assert run["properties"]["masked"] is True and "--show-pii" in run["properties"]["warning"]


def test_results_are_capped_at_githubs_limit_keeping_the_most_severe(monkeypatch: pytest.MonkeyPatch) -> None:
    assert sarif_module.MAX_RESULTS == 25_000
    monkeypatch.setattr(sarif_module, "MAX_RESULTS", 4)
    report = make_report()
    many = [f.model_copy(update={"record_id": f"{f.record_id}-{i}"}) for i in range(3) for f in report.findings]
    text = render_sarif(report.model_copy(update={"findings": many}))
    run = json.loads(text)["runs"][0]
    assert sorted(r["properties"]["severity"] for r in run["results"]) == ["critical"] * 3 + ["medium"]
    assert run["properties"]["resultsOmitted"] == 5 and "at most 4 results" in run["properties"]["truncated"]
    assert_github_accepts(text)


def test_twenty_five_thousand_results_fit_githubs_size_limit() -> None:
    report = make_report()
    many = [f.model_copy(update={"record_id": f"record-{i:06d}"}) for i in range(8_334) for f in report.findings]
    text = render_sarif(report.model_copy(update={"findings": many}))
    run = json.loads(text)["runs"][0]
    assert len(run["results"]) == 25_000 and run["properties"]["resultsOmitted"] == 2
    assert github_problems(text) == []
