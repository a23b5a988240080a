"""`vdbguard demo` writes every report format (SARIF valid against its schema, HTML clean in a real browser) and
scores the scan against its ground truth by the vectors and by the stored text."""

import csv
import json
from pathlib import Path

import jsonschema
from click.testing import CliRunner

from tests.reports.test_html import _chromium, _screenshot
from tests.reports.test_writers import SCHEMA
from vdbguard.cli import main
from vdbguard.corpus import human_sentences
from vdbguard.demo import NAMES_A_PERSON, demo_texts
from vdbguard.reports.schema import Report


def test_demo_writes_all_five_formats(tmp_path: Path, model_cache: Path) -> None:
    out = tmp_path / "demo"
    result = CliRunner().invoke(main, ["demo", "--out", str(out), "--records", "40", "--profile", "small"])
    assert result.exit_code == 0, result.output

    report = Report.model_validate_json((out / "report.json").read_text())
    assert report.summary.records_scanned == 40 and report.findings
    # scored by both kinds of finding; the detector reads the stored text of its own templates nearly all right
    metrics = json.loads((out / "demo-metrics.json").read_text())
    assert sorted(metrics) == ["stored_text", "vector"] and "by the stored text" in result.output
    text = metrics["stored_text"]
    assert text["pii_records"] == 20 and text["flagged_pii"] >= 18 and text["flagged_clean"] <= 2
    assert "## Findings" in (out / "report.md").read_text()
    with (out / "report.csv").open(newline="") as handle:
        assert len(list(csv.DictReader(handle))) >= len(report.findings)
    sarif = json.loads((out / "report.sarif").read_text())
    jsonschema.validators.validator_for(SCHEMA)(SCHEMA).validate(sarif)
    assert len(sarif["runs"][0]["results"]) >= len(report.findings)

    png, console = _screenshot(_chromium(), out / "report.html", tmp_path, "demo")
    assert console == [] and png.stat().st_size > 20_000


def test_the_demos_clean_records_leave_out_the_human_lines_that_name_a_person() -> None:
    """Its ground truth calls every human line clean; a line naming a person would score a right finding as false."""
    holdout = set(human_sentences("holdout"))
    assert NAMES_A_PERSON.issubset(holdout), "the reviewed lines are no longer in the corpus: read its lines again"
    clean = {text for text, pii in demo_texts(2000) if not pii}
    assert len(clean & holdout) == len(holdout) - len(NAMES_A_PERSON) and not clean & NAMES_A_PERSON
