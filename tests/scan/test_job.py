"""Scan jobs from vdbguard.toml: validation with locations, credentials by name, suppressions, outputs."""

import json
import re
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import chroma_store_table, http_recorder, suppression
from vdbguard import credentials
from vdbguard.cache import _host_tag
from vdbguard.cli import main
from vdbguard.config import STARTER, load_job
from vdbguard.errors import VdbguardError
from vdbguard.reports.schema import Report


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False, env=env)
    return result.exit_code, result.output


def test_config_init_writes_a_starter_that_validates(tmp_path: Path) -> None:
    target = tmp_path / "vdbguard.toml"
    code, output = run("config", "init", str(target))
    assert code == 0 and "edit [[stores]], then" in output, "the table name survives rich's markup"
    code, output = run("config", "validate", str(target))
    assert code == 0, output
    assert "valid: 1 store(s), 1 collection(s)" in output
    assert run("config", "init", str(target))[0] == 2, "never overwrites without --force"
    schema = json.loads(run("config", "schema")[1])
    assert {"job", "stores", "attacks", "allow", "suppressions", "severity", "output"} <= set(schema["properties"])
    assert json.loads((Path(__file__).parents[2] / "docs" / "job-schema.json").read_text()) == schema, (
        "regenerate docs/job-schema.json: python -m vdbguard.config"
    )


def test_validate_names_every_problem_with_its_location(tmp_path: Path) -> None:
    bad = (
        STARTER.replace('fail_on = "high"', 'fail_on = "hihg"\nbatchsize = 3')
        .replace('path = "chroma-data"', 'url = "http://admin:hunter2@db:8000"')
        .replace('fast = ["pii-probe"', 'fast = ["nosuch", "pii-probe"')
        .replace("# [stores.options]", "[stores.options]\npassword = 'x'")
        .replace("# patterns = [", "patterns = ['(unclosed', ")
    )
    (tmp_path / "bad.toml").write_text(bad)
    code, output = run("config", "validate", str(tmp_path / "bad.toml"))
    assert code == 2
    numbered = bad.splitlines()
    for setting, text in (("job.fail_on", 'fail_on = "hihg"'), ("job.batchsize", "batchsize = 3")):
        line = next(i for i, row in enumerate(numbered, start=1) if row.startswith(text))
        assert f"{setting} (line {line}):" in output, output
    for where, expected in (
        ("job.fail_on", "Input should be"),
        ("job.batchsize", "unknown setting"),
        ("stores[0].options", "option 'password' looks like a credential"),
        ("stores[0].url", "the url holds credentials"),
        ("attacks.fast", "unknown fast attack 'nosuch'"),
        ("allow.patterns", "pattern '(unclosed' is not a regular expression"),
    ):
        assert re.search(rf"{re.escape(where)} \(line \d+\): {re.escape(expected)}", output), (where, output)
    assert "hunter2" not in output and "Traceback" not in output
    (tmp_path / "syntax.toml").write_text("[job\n")
    code, output = run("config", "validate", str(tmp_path / "syntax.toml"))
    assert code == 2 and "not valid TOML" in output and "line 1" in output


def test_validate_names_each_misspelt_plugin_with_the_closest_one(tmp_path: Path) -> None:
    """Every name the scan would load (connector, fast and deep attacks, formats) is checked before it runs."""
    typos = {
        'connector = "chroma"': (
            'connector = "chromadb"',
            "stores[0].connector",
            "unknown connector 'chromadb'; did you mean chroma?",
        ),
        'fast = ["pii-probe"': (
            'fast = ["pii-prob"',
            "attacks.fast",
            "unknown fast attack 'pii-prob'; did you mean pii-probe?",
        ),
        '# deep = ["slot-search"]': (
            'deep = ["slot-serch"]',
            "attacks.deep",
            "unknown deep attack 'slot-serch'; did you mean slot-search?",
        ),
        'formats = ["json", "md", "html"': (
            'formats = ["json", "md", "htlm"',
            "output.formats",
            "unknown or broken format 'htlm'; did you mean html?",
        ),
    }
    bad = STARTER
    for old, (typo, _, _) in typos.items():
        assert old in bad, old
        bad = bad.replace(old, typo)
    (tmp_path / "typos.toml").write_text(bad)
    code, output = run("config", "validate", str(tmp_path / "typos.toml"))
    flat = " ".join(output.split())
    assert code == 2, output
    for _, where, expected in typos.values():
        assert re.search(rf"{re.escape(where)} \(line \d+\): {re.escape(expected)}", flat), (where, output)


def test_the_deep_tier_takes_strongest_and_a_per_record_budget(tmp_path: Path) -> None:
    deep = STARTER.replace('# deep = ["slot-search"]', 'deep = ["strongest"]')
    (tmp_path / "deep.toml").write_text(deep.replace("# deep_record_seconds = 1.8", "deep_record_seconds = 5"))
    assert run("config", "validate", str(tmp_path / "deep.toml"))[0] == 0
    (tmp_path / "bad.toml").write_text(deep.replace("# deep_record_seconds = 1.8", "deep_record_seconds = -1"))
    code, output = run("config", "validate", str(tmp_path / "bad.toml"))
    assert code == 2 and "attacks.deep_record_seconds" in output, output


def test_credentials_come_from_the_named_environment_variable_only(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "job.toml").write_text(
        '[[stores]]\nconnector = "qdrant"\nurl = "http://127.0.0.1:1"\ncollections = ["c"]\n'
        '[stores.credentials]\napi_key = "TEST_VDBGUARD_KEY"\n'
    )
    store = load_job(tmp_path / "job.toml").stores[0]
    monkeypatch.delenv("TEST_VDBGUARD_KEY", raising=False)
    with pytest.raises(VdbguardError, match=r"TEST_VDBGUARD_KEY .* is not set"):
        store.connector_settings("c", tmp_path)
    monkeypatch.setenv("TEST_VDBGUARD_KEY", "s3cret-value")
    assert store.connector_settings("c", tmp_path)["api_key"] == "s3cret-value"
    code, output = run("config", "validate", str(tmp_path / "job.toml"), env={"TEST_VDBGUARD_KEY": ""})
    assert code == 0 and "not set in this environment" in output and "TEST_VDBGUARD_KEY" in output


@pytest.mark.parametrize(
    ("store", "where", "expected"),
    [
        (
            'url = "http://127.0.0.1:1"\n[stores.credentials]\napi_key = "sk-inline-JobSecret01"',
            "stores[0].credentials.api_key",
            "must name an environment variable",
        ),
        ('url = "http://admin:Job/Secret02@127.0.0.1:1"', "stores[0].url", "the url holds credentials"),
        ('url = "http://admin:Job@Secret03@127.0.0.1:1"', "stores[0].url", "the url holds credentials"),
        ('url = "http://127.0.0.1:1/?api_key=JobSecret04"', "stores[0].url", "the url's query holds credentials"),
        (
            'url = "http://127.0.0.1:1"\n[stores.options]\nheaders = {Authorization = "Bearer JobSecret05"}',
            "stores[0].options",
            "option 'headers.Authorization' looks like a credential",
        ),
        (
            'url = "http://127.0.0.1:1"\n[stores.options]\nheaders = {X-Api-Key = "JobSecret06"}',
            "stores[0].options",
            "option 'headers.X-Api-Key' looks like a credential",
        ),
    ],
)
def test_a_job_file_holds_no_secret_and_never_echoes_one(tmp_path: Path, store: str, where: str, expected: str) -> None:
    """Inline secrets are refused by `config validate` and by `scan --config`, and neither shows the value."""
    job = tmp_path / "job.toml"
    job.write_text(f'[[stores]]\nconnector = "qdrant"\ncollections = ["c"]\n{store}\n')
    secret = re.search(r"Secret\d\d", store)
    assert secret is not None
    for command in (("config", "validate", str(job)), ("scan", "--config", str(job))):
        code, output = run(*command)
        output = " ".join(output.split())  # the console wraps long lines
        assert code == 2, output
        assert re.search(rf"{re.escape(where)} \(line \d+\): {re.escape(expected)}", output), output
        assert secret.group() not in output and "Traceback" not in output


@pytest.mark.parametrize(
    ("secret", "kind"), [("AKIAIOSFODNN7EXAMPLE", "AWS Access Key"), ("A3F9B2C4D5E6F7081A2B3C4D", "Hex High Entropy")]
)
def test_a_secret_shaped_like_a_variable_name_is_refused_by_its_setting_alone(
    tmp_path: Path, secret: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Capitals and digits pass for a variable's name: what detect-secrets calls a secret is refused all the same,
    named by setting and line, and no message (problems, unset variables, JSON logs) shows it."""
    monkeypatch.setattr(credentials, "_known", set())  # the refused value is remembered: not for other tests
    job = tmp_path / "job.toml"
    job.write_text(
        '[[stores]]\nconnector = "qdrant"\nurl = "http://127.0.0.1:1"\ncollections = ["c"]\n'
        f'[stores.credentials]\nhost_token = "TEST_VDBGUARD_UNSET"\napi_key = "{secret}"\n'
    )
    for command in (
        ("config", "validate", str(job)),
        ("--log-format", "json", "config", "validate", str(job)),
        ("scan", "--config", str(job)),
    ):
        code, output = run(*command, env={"TEST_VDBGUARD_UNSET": ""})
        flat = " ".join(output.split())
        assert code == 2, output
        assert re.search(rf"stores\[0\]\.credentials\.api_key \(line 7\): this is a secret \({kind}", flat), output
        assert secret not in output and "not set in this environment" not in output and "Traceback" not in output
    with pytest.raises(VdbguardError) as refused:
        load_job(job)
    assert secret not in str(refused.value.__cause__), "pydantic's own error quotes no input"
    assert credentials.safe_text(f"a log line quoting {secret}") == "a log line quoting ***"
    job.write_text(job.read_text().replace(secret, "MY_COMPANY_PRODUCTION_QDRANT_API_KEY_V2"))
    assert load_job(job).stores[0].credentials["api_key"] == "MY_COMPANY_PRODUCTION_QDRANT_API_KEY_V2"


def _job(tmp_path: Path, store: Path, collection: str, extra: str = "") -> Path:
    job = tmp_path / "job.toml"
    job.write_text(
        f"""
[job]
name = "test"
state = "state.sqlite"
profile = "small"
owner_calibration = "off"
fail_on = "critical"

{chroma_store_table(store, collection, name="notes")}
[output]
dir = "out"
formats = ["json", "csv"]
metrics_file = "metrics/vdbguard.prom"
{extra}
"""
    )
    return job


def test_scan_config_runs_the_job_with_suppressions_and_keeps_state(
    pii_store, small_attacks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, collection, _ = pii_store
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    code, output = run("scan", "--config", str(_job(tmp_path, path, collection)))
    assert code in (0, 1), output
    report_file = tmp_path / "out" / "notes" / collection / "report.json"
    first = Report.model_validate_json(report_file.read_text())
    assert (report_file.parent / "report.csv").exists()
    metrics = (tmp_path / "metrics" / f"vdbguard-notes-{collection}.prom").read_text()
    assert f'vdbguard_records_scanned{{collection="{collection}"}} 120' in metrics
    assert first.coverage.records_attacked == first.summary.records_scanned == 120
    assert code == int(any(f.severity.value == "critical" for f in first.findings))

    accepted, expired = [f for f in first.findings if f.kind == "vector"][:2]
    suppressions = suppression(accepted.record_id, "test account", date(2999, 1, 1), "privacy@example.com")
    suppressions += suppression(expired.record_id, "was accepted", date(2000, 1, 1), "privacy@example.com")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    killed_copy = tmp_path / "tmp" / f"vdbguard-chroma-{_host_tag()}-{gone.stdout.strip()}-x"  # a SIGKILLed scan's
    killed_copy.mkdir()
    hook = 'webhook_env = "TEST_VDBGUARD_HOOK"\n'
    with http_recorder() as (base, posted):
        url = base.replace("http://", "http://hook-user:pa55word@") + "/hooks/s3cr3tpath"
        job = _job(tmp_path, path, collection, hook + suppressions)
        code, output = run("scan", "--config", str(job), env={"TEST_VDBGUARD_HOOK": url})
    (request,) = posted
    assert request["path"] == "/hooks/s3cr3tpath" and json.loads(request["body"])["records_scanned"] == 120
    assert "pa55word" not in output and "s3cr3tpath" not in output
    second = Report.model_validate_json(report_file.read_text())
    ids = {f.record_id for f in second.findings}
    assert accepted.record_id not in ids and expired.record_id in ids, "both kinds of finding are accepted"
    accepted_kinds = sum(f.record_id == accepted.record_id for f in first.findings)
    assert second.coverage.findings_suppressed == accepted_kinds
    assert second.summary.records_flagged == first.summary.records_flagged - 1
    assert "expired on 2000-01-01" in " ".join(output.split())
    assert second.coverage.records_attacked == 0, "suppressions change the report, not the verdicts"
    assert not killed_copy.exists(), "a run that copies nothing still deletes a killed run's private copy"
    assert len(second.history) == 2
    code, output = run("report", str(tmp_path / "state.sqlite"), "--format", "json", "--out", str(tmp_path / "again"))
    assert code == 0, output
    again = Report.model_validate_json((tmp_path / "again" / "report.json").read_text())
    assert again.findings == second.findings and again.summary == second.summary, "suppressions kept"

    code, output = run("scan", "--config", str(tmp_path / "job.toml"), "--collection", collection)
    assert code == 2 and "--config names its own stores" in output


def test_a_failing_collection_of_a_job_marks_its_metrics_file(tmp_path: Path) -> None:
    job = STARTER.replace('path = "chroma-data"', 'path = "no-such-store"').replace(
        '# metrics_file = "/var/lib/node_exporter/textfile/vdbguard.prom"', 'metrics_file = "metrics/vdbguard.prom"'
    )
    (tmp_path / "job.toml").write_text(job)
    result = CliRunner().invoke(main, ["scan", "--config", str(tmp_path / "job.toml")])
    assert result.exit_code == 2, result.output
    (prom,) = (tmp_path / "metrics").glob("vdbguard-*-tickets.prom")
    assert "vdbguard_scan_success" in prom.read_text() and 'vdbguard_scan_success{collection="tickets"} 0' in (
        prom.read_text()
    )


def test_a_job_run_from_python_publishes_as_the_command_does(tmp_path: Path) -> None:
    """``run_job`` publishes each collection itself: a scheduler that runs a job file from Python gets its textfile
    and store summary as `vdbguard scan --config` does."""
    from vdbguard.scan.job import CollectionFailure, Publisher, run_job

    job = STARTER.replace('path = "chroma-data"', 'path = "no-such-store"').replace(
        '# metrics_file = "/var/lib/node_exporter/textfile/vdbguard.prom"', 'metrics_file = "metrics/vdbguard.prom"'
    )
    (tmp_path / "job.toml").write_text(job)
    config = load_job(tmp_path / "job.toml")
    publisher = Publisher.for_job(config)
    (result,) = run_job(config, publisher=publisher)
    assert isinstance(result, CollectionFailure)
    (prom,) = (tmp_path / "metrics").glob("vdbguard-*-tickets.prom")
    assert 'vdbguard_scan_success{collection="tickets"} 0' in prom.read_text()
    assert [failure.collection for failure in publisher.store_summary.failed] == ["tickets"]


def test_globs_match_the_listed_collections_in_order_each_once_and_names_stay_as_written() -> None:
    from vdbguard.scan.job import match_collections

    existing = ["tickets_b", "notes", "tickets_a", "archive"]
    chosen = match_collections(["tickets_*", "archive", "tickets_a", "missing", "*"], existing, "the store")
    assert chosen == ["tickets_a", "tickets_b", "archive", "missing", "notes"]
    assert match_collections(["Tickets_*"], ["Tickets_x", "tickets_y"], "s") == ["Tickets_x"], "case-sensitive"
    with pytest.raises(VdbguardError) as error:
        match_collections(["notes", "invoices_?"], existing, "the chroma store at /data")
    assert error.value.message == "no collection of the chroma store at /data matches 'invoices_?'"
    assert error.value.hint == "existing collections: archive, notes, tickets_a, tickets_b"
    with pytest.raises(VdbguardError, match="none"):
        match_collections(["*"], [], "an empty store")
    many = [f"c{i:03d}" for i in range(120)]
    with pytest.raises(VdbguardError) as error:
        match_collections(["x*"], many, "a big store")
    assert error.value.hint is not None and error.value.hint.endswith("c049 and 70 more")


def _glob_job(tmp_path: Path, store: Path, collections: str) -> Path:
    job = tmp_path / "job.toml"
    job.write_text(
        f'[[stores]]\nconnector = "chroma"\npath = "{store}"\ncollections = {collections}\n[output]\ndir = "out"\n'
    )
    return job


def test_a_job_glob_that_matches_nothing_stops_before_any_scan_naming_the_collections(tmp_path: Path) -> None:
    from tests.helpers import make_chroma_store

    store = tmp_path / "store"
    for name in ("tickets_2025", "notes"):
        make_chroma_store(store, name, 3, 8, seed=1)
    code, output = run("scan", "--config", str(_glob_job(tmp_path, store, '["notes", "invoices_*"]')))
    flat = " ".join(output.split())
    assert code == 2, output
    assert "matches 'invoices_*'" in flat and "existing collections: notes, tickets_2025" in flat
    assert not (tmp_path / "out").exists(), "nothing scanned, no folder made"


def test_two_collections_that_would_share_a_report_folder_stop_the_job_before_it_scans(tmp_path: Path) -> None:
    code, output = run("scan", "--config", str(_glob_job(tmp_path, tmp_path, '["a b", "a_b"]')))
    flat = " ".join(output.split())
    assert code == 2, output
    assert "collections 'chroma/a b' and 'chroma/a_b' would write their reports to one folder" in flat
