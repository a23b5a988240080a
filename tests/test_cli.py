"""The command line as a user meets it: exit codes, reports, clear errors, no tracebacks."""

import hashlib
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import jsonschema
import pytest
from click.testing import CliRunner

from tests.helpers import chroma_job, free_port, http_recorder, make_chroma_store
from vdbguard.cli import main
from vdbguard.cli.help import Declared
from vdbguard.reports.schema import SCHEMA_VERSION, Report


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def store_checksums(path: Path) -> dict[str, str]:
    return {
        str(f.relative_to(path)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(path.rglob("*"))
        if f.is_file()
    }


@pytest.fixture
def scan_args(pii_store, small_attacks) -> list[str]:
    path, collection, _ = pii_store
    return [
        "scan",
        "--connector",
        "chroma",
        "--path",
        str(path),
        "--collection",
        collection,
        "--profile",
        "small",
    ]


def test_scan_writes_valid_reports_and_exits_1_on_findings(scan_args, pii_store, tmp_path: Path) -> None:
    before = store_checksums(pii_store[0])
    code, output = run(*scan_args, "--out", str(tmp_path))
    assert code == 1, output
    assert re.search(r"Scanning[^\n]*: done, \d+/\d+", output), "no terminal: plain progress lines"
    report = Report.model_validate_json((tmp_path / "report.json").read_text())
    assert report.schema_version == SCHEMA_VERSION == "1.8" and report.masked and report.detector == "presidio 17"
    assert report.verdict is not None and report.verdict.name in ("owner", "packaged")
    assert report.summary.records_scanned == len(pii_store[2])
    assert report.findings
    markdown = (tmp_path / "report.md").read_text()
    assert "## Findings" in markdown and report.findings[0].record_id in markdown
    assert store_checksums(pii_store[0]) == before, "a scan must leave the store byte-identical"


def test_reports_never_contain_the_stored_pii_unless_asked(scan_args, pii_store, tmp_path: Path) -> None:
    from vdbguard.connectors.chroma import ChromaConnector

    from vdbguard.detectors.presidio import PresidioDetector

    run(*scan_args, "--out", str(tmp_path / "masked"), "--fail-on", "never")
    masked = (tmp_path / "masked" / "report.json").read_text() + (tmp_path / "masked" / "report.md").read_text()
    detector = PresidioDetector()
    with ChromaConnector(collection=pii_store[1], path=pii_store[0]) as connector:
        values = {
            d.value
            for batch in connector.iter_batches()
            for record in batch.records
            for d in detector.detect(record.text or "")
            if len(d.value) > 3
        }
    assert values
    # Whole tokens only: a birth year such as 1955 must not be found inside a score like 0.81955.
    leaked = [v for v in values if re.search(rf"(?<![\w.]){re.escape(v)}(?!\w)", masked)]
    assert not leaked


def test_embedder_auto_identifies_the_model_from_the_stored_vectors(
    scan_args, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    code, output = run(*scan_args, "--embedder", "auto", "--out", str(tmp_path), "--fail-on", "never")
    assert code == 0, output
    said = [r.getMessage() for r in caplog.records if r.name == "vdbguard.scan.plan"]  # the log the CLI always shows
    assert "Identified the embedder from the stored vectors: all-MiniLM-L6-v2" in said
    report = Report.model_validate_json((tmp_path / "report.json").read_text())
    assert report.embedder.name == "all-MiniLM-L6-v2"


def test_unknown_attack_is_a_clear_error(scan_args, tmp_path: Path) -> None:
    code, output = run(*scan_args, "--attack", "nosuch", "--out", str(tmp_path))
    assert code == 2
    assert "--attack: unknown fast attack 'nosuch'" in output and "bag-of-words" in output, "named by its flag"
    assert "Traceback" not in output


def test_fail_on_thresholds(scan_args, tmp_path: Path) -> None:
    assert run(*scan_args, "--out", str(tmp_path), "--fail-on", "never")[0] == 0
    report = Report.model_validate_json((tmp_path / "report.json").read_text())
    worst = max(f.severity.rank for f in report.findings)
    above = ["low", "medium", "high", "critical"][worst + 1 :]
    for level in above:
        assert run(*scan_args, "--out", str(tmp_path), "--fail-on", level)[0] == 0
    assert run(*scan_args, "--out", str(tmp_path), "--fail-on", "low")[0] == 1


def test_rescan_with_state_carries_unchanged_records_over(scan_args, tmp_path: Path) -> None:
    state = tmp_path / "state.sqlite"
    run(*scan_args, "--out", str(tmp_path / "a"), "--state", str(state), "--batch-size", "50")
    code, output = run(*scan_args, "--out", str(tmp_path / "b"), "--state", str(state), "--batch-size", "50")
    assert code == 1
    assert "attacked 0 new or changed records, carried 120 over" in output
    a = json.loads((tmp_path / "a" / "report.json").read_text())
    b = json.loads((tmp_path / "b" / "report.json").read_text())
    assert a["findings"] == b["findings"]
    assert [run["records_attacked"] for run in b["history"]] == [120, 0]

    code, output = run("report", str(state), "--format", "md,sarif", "--out", str(tmp_path / "c"))
    assert code == 0, output
    assert (tmp_path / "c" / "report.md").read_text() == (tmp_path / "b" / "report.md").read_text()


def test_another_detector_version_re_attacks_what_the_state_holds(
    scan_args, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A detector that labels differently changes verdicts: none of the old ones may be carried over."""
    from vdbguard.detectors.presidio import PresidioDetector

    state = tmp_path / "state.sqlite"
    run(*scan_args, "--out", str(tmp_path / "a"), "--state", str(state), "--fail-on", "never")
    monkeypatch.setattr(PresidioDetector, "version", PresidioDetector.version + 1)
    code, output = run(*scan_args, "--out", str(tmp_path / "b"), "--state", str(state), "--fail-on", "never")
    assert code == 0, output
    assert "attacked 120 new or changed records, carried 0 over" in output


def test_spooled_findings_reach_every_report_and_the_re_render_as_held_ones(
    scan_args, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the in-memory limit (here 0) a scan's findings, and a re-render's from the state, are streamed from
    disk: the same findings in report.json, and the same report.md."""
    from vdbguard.scan import state

    run(*scan_args, "--out", str(tmp_path / "held"), "--format", "json,md")
    monkeypatch.setattr(state, "IN_MEMORY_FINDINGS", 0)
    scanned = run(*scan_args, "--out", str(tmp_path / "spooled"), "--state", str(tmp_path / "s"), "--format", "json,md")
    rendered = run("report", str(tmp_path / "s"), "--format", "json,md", "--out", str(tmp_path / "rendered"))
    assert scanned[0] == 1 and rendered[0] == 0, scanned[1] + rendered[1]
    held = json.loads((tmp_path / "held" / "report.json").read_text())
    assert held["findings"]
    for folder in ("spooled", "rendered"):
        assert json.loads((tmp_path / folder / "report.json").read_text())["findings"] == held["findings"], folder
        findings_section = (tmp_path / folder / "report.md").read_text().split("## Findings")[1]
        assert findings_section == (tmp_path / "held" / "report.md").read_text().split("## Findings")[1], folder


def test_missing_collection_is_a_clear_error(pii_store) -> None:
    code, output = run("scan", "--connector", "chroma", "--path", str(pii_store[0]), "--collection", "nope")
    assert code == 2
    assert "nope" in output and "Traceback" not in output and "demo_notes" in output


def test_unreachable_server_is_a_clear_error() -> None:
    url = f"http://user:s3cret@127.0.0.1:{free_port()}"
    code, output = run("scan", "--connector", "chroma", "--url", url, "--collection", "notes")
    assert code == 2
    assert "Traceback" not in output and "s3cret" not in output


def test_dimension_mismatch_is_refused_without_a_resume_hint(tmp_path: Path, model_cache: Path) -> None:
    """Running the same command again cannot help here, so the error does not say it would."""
    make_chroma_store(tmp_path / "store", "small_vectors", n=5, dim=16, seed=1)
    code, output = run(
        "scan",
        "--connector",
        "chroma",
        "--path",
        str(tmp_path / "store"),
        "--collection",
        "small_vectors",
        "--state",
        str(tmp_path / "scan.sqlite"),
        "--out",
        str(tmp_path / "out"),
    )
    assert code == 2
    assert "16-d" in output and "384-d" in output and "--embedder" in output
    assert "resume" not in output


def test_path_and_url_are_mutually_exclusive() -> None:
    code, output = run("scan", "--connector", "chroma", "--collection", "x")
    assert code == 2 and "exactly one of --path" in output


def test_unknown_connector() -> None:
    code, output = run("scan", "--connector", "nosuchdb", "--path", ".", "--collection", "x")
    assert code == 2 and "chroma" in output


def test_a_misspelt_plugin_name_suggests_the_closest_one() -> None:
    from vdbguard import plugins
    from vdbguard.errors import VdbguardError

    code, output = run("scan", "--connector", "chromadb", "--path", ".", "--collection", "x")
    assert code == 2 and "did you mean chroma?" in output, output
    for kind, typo, meant in (("attacks", "bag-of-word", "bag-of-words"), ("transforms", "gausian", "gaussian")):
        with pytest.raises(VdbguardError) as raised:
            plugins.load(kind, typo)
        assert raised.value.hint is not None and raised.value.hint.startswith(f"did you mean {meant}? choose from")
    with pytest.raises(VdbguardError) as raised:
        plugins.load("connectors", "nothing-like-it")
    assert raised.value.hint is not None and "did you mean" not in raised.value.hint


def test_attacks_and_connectors_list() -> None:
    code, output = run("attacks", "list")
    assert code == 0 and {"bag-of-words", "pii-probe"} <= set(output.split())
    assert "(strongest)" in output  # measured quality, not a fixed rank, names the strongest inverter
    code, output = run("connectors", "list")
    assert code == 0 and "chroma" in output and "yes" in output


def test_report_schema_doc_is_current() -> None:
    committed = json.loads((Path(__file__).parent.parent / "docs" / "report-schema.json").read_text())
    assert committed == Report.model_json_schema(), "regenerate: python -m vdbguard.reports.schema_doc"


def test_failed_scan_marks_the_metrics_file_and_keeps_the_last_success(tmp_path: Path) -> None:
    from tests.reports.test_writers import make_report
    from vdbguard.reports.metrics import write_metrics

    metrics = tmp_path / "vdbguard.prom"
    write_metrics(metrics, make_report(), collection="notes", duration_s=1, now=1234.5)
    url = f"http://user:s3cret@127.0.0.1:{free_port()}"
    with http_recorder() as (hook, received):
        webhook = hook.replace("http://", "http://hook:h00kpass@")
        code, output = run(
            "scan", "--connector", "chroma", "--url", url, "--collection", "notes",
            "--metrics-file", str(metrics), "--webhook", webhook,
        )  # fmt: skip
    assert code == 2 and not received, "a failed scan posts no counts"
    text = metrics.read_text()
    assert 'vdbguard_scan_success{collection="notes"} 0' in text
    assert 'vdbguard_last_success_timestamp_seconds{collection="notes"} 1234.5' in text
    assert "vdbguard_records_scanned" not in text
    assert "s3cret" not in output + text and "h00kpass" not in output


def test_bad_webhook_is_refused_before_scanning_without_echoing_it() -> None:
    code, output = run(
        "scan", "--connector", "chroma", "--path", ".", "--collection", "x", "--webhook", "ftp://u:pw12345@h/x"
    )
    assert code == 2 and "--webhook" in output and "pw12345" not in output


def test_scan_for_a_job_runner_json_progress_metrics_and_webhook(scan_args, tmp_path: Path) -> None:
    with http_recorder() as (hook, received):
        result = CliRunner().invoke(
            main,
            [
                "--log-format", "json", *scan_args, "--out", str(tmp_path / "out"), "--fail-on", "never",
                "--metrics-file", str(tmp_path / "vdbguard.prom"), "--webhook", hook + "/scan",
            ],
            catch_exceptions=False,
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = Report.model_validate_json((tmp_path / "out" / "report.json").read_text())
    events = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    done = [e for e in events if e["event"] == "task_done" and e["task"].startswith("Scanning")]
    assert done and done[-1]["done"] == report.summary.records_scanned, events
    flagged = report.summary.records_flagged
    assert (
        f'vdbguard_records_flagged{{collection="{report.target.collection}"}} {flagged}'
        in (tmp_path / "vdbguard.prom").read_text()
    )
    (request,) = received
    posted = json.loads(request["body"])
    assert posted["records_flagged"] == flagged
    assert not any(f.record_id in request["body"].decode() for f in report.findings)  # counts only, never records


# -- output CI accepts as-is (#44): SARIF for code scanning, --json, JSON lines, --baseline ---------------


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed command in its own process, as CI runs it: its stdout and stderr as they really are."""
    command = [str(Path(sys.executable).parent / "vdbguard"), *args]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"}
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


def json_lines(stderr: str) -> list[dict]:
    """Every line of ``stderr`` as the JSON object it must be; plain text fails with the line itself."""
    events = []
    for line in stderr.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            pytest.fail(f"not a JSON line on stderr: {line!r}")
        assert isinstance(event, dict), line
        events.append(event)
    return events


def artifact_uris(sarif: str) -> set[str]:
    results = json.loads(sarif)["runs"][0]["results"]
    return {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}


def test_a_real_scans_sarif_is_what_github_code_scanning_accepts(scan_args, tmp_path: Path) -> None:
    from tests.reports.test_sarif_github import assert_github_accepts, severity_problems
    from tests.reports.test_writers import SCHEMA

    code, output = run(*scan_args, "--out", str(tmp_path), "--format", "json,sarif", "--fail-on", "never")
    assert code == 0, output
    text = (tmp_path / "report.sarif").read_text()
    assert_github_accepts(text)
    assert severity_problems(text) == []
    log = json.loads(text)
    validator = jsonschema.validators.validator_for(SCHEMA)
    validator(SCHEMA, format_checker=validator.FORMAT_CHECKER).validate(log)
    report = Report.model_validate_json((tmp_path / "report.json").read_text())
    (run_,) = log["runs"]
    assert len(run_["results"]) == report.finding_count > 0
    assert artifact_uris(text) == {"vdbguard/chroma/demo_notes"}


def test_json_prints_one_summary_on_stdout_and_every_stderr_line_is_json(scan_args, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = cli("--log-format", "json", *scan_args, "--out", str(out), "--format", "json,sarif", "--json",
               "--top-findings", "3")  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    (line,) = done.stdout.splitlines()
    summary = json.loads(line)
    report = Report.model_validate_json((out / "report.json").read_text())
    assert summary["exit_code"] == done.returncode and summary["fail_on"] == "high"
    assert summary["records_scanned"] == report.summary.records_scanned == 120
    assert summary["records_flagged"] == report.summary.records_flagged
    assert {k: v for k, v in summary["by_severity"].items() if v} == report.summary.by_severity
    assert summary["by_pii_type"] == report.summary.by_pii_type
    (scanned,) = summary["scans"]
    assert scanned["reports"] == {"json": str(out / "report.json"), "sarif": str(out / "report.sarif")}
    top = scanned["top_findings"]
    assert len(top) == 3 and [t["severity"] for t in top] == sorted((t["severity"] for t in top), key=_rank)
    worst = max(report.findings, key=lambda f: f.severity.rank).severity.value
    assert top[0]["severity"] == worst
    ids = {f.record_id for f in report.findings}
    for entry in top:
        assert entry["record_id"] in ids and entry["pii_types"] and entry["score"] >= entry["threshold"] > 0
        assert set(entry) >= {"attack", "score", "threshold", "severity"} and "recovered" not in entry
    assert "┃" not in done.stdout + done.stderr, "no table in --json mode"
    events = json_lines(done.stderr)
    kinds = {e["event"] for e in events}
    assert {"task_start", "task_done", "reports_written", "coverage"} <= kinds, kinds
    (written,) = [e for e in events if e["event"] == "reports_written"]
    assert written["paths"] == scanned["reports"]


def _rank(severity: str) -> int:
    return -["low", "medium", "high", "critical"].index(severity)


def test_json_logs_make_errors_json_objects_without_credentials() -> None:
    url = f"http://admin:s3cretPass@127.0.0.1:{free_port()}"
    failed = cli("--log-format", "json", "scan", "--connector", "chroma", "--url", url, "--collection", "notes",
                 "--json")  # fmt: skip
    usage = cli("--log-format", "json", "scan", "--connector", "chroma", "--collection", "notes")
    unknown = cli("--log-format", "json", "scan", "--no-such-flag")
    for done in (failed, usage, unknown):
        assert done.returncode == 2, done.stderr
        (error,) = json_lines(done.stderr)
        assert error["event"] == "error" and error["level"] == "error" and error["message"] and error["hint"]
        assert "s3cretPass" not in done.stdout + done.stderr
    assert "127.0.0.1" in json_lines(failed.stderr)[0]["message"]
    summary = json.loads(failed.stdout)
    assert summary["exit_code"] == 2 and summary["error"]["message"] == json_lines(failed.stderr)[0]["message"]
    assert "--path" in json_lines(usage.stderr)[0]["message"] and usage.stdout == ""


NOISY_LIBRARY = """
import logging, sys, warnings
import vdbguard.config as config
load_job = config.load_job
def noisy(path):
    print("a library's own line on stderr", file=sys.stderr)
    sys.stderr.write("Batches:  50%|#####     | 1/2\\rBatches: 100%|##########| 2/2\\n")
    print("and one on stdout")
    warnings.warn("something is deprecated")
    logging.getLogger("somelib").warning("cannot reach http://u:hunter2x@db:1/")
    return load_job(path)
config.load_job = noisy
from vdbguard.cli import run
run()
"""


def test_json_logs_wrap_what_libraries_print_warn_and_log(tmp_path: Path) -> None:
    from vdbguard.config import STARTER

    job = tmp_path / "vdbguard.toml"
    job.write_text(STARTER, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", NOISY_LIBRARY, "--log-format", "json", "config", "validate", str(job)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    events = json_lines(done.stderr)
    messages = [e.get("message", "") for e in events]
    assert "a library's own line on stderr" in messages and "Batches: 100%|##########| 2/2" in messages
    assert any("something is deprecated" in m for m in messages), messages  # Python's warnings, as log records
    assert any(e.get("logger") == "somelib" for e in events) and "hunter2x" not in done.stderr
    assert any("is valid" in m for m in messages)


def test_a_job_file_scan_prints_one_json_summary(pii_store, small_attacks, tmp_path: Path) -> None:
    from tests.reports.test_sarif_github import assert_github_accepts

    store_path, collection, _ = pii_store
    job = tmp_path / "vdbguard.toml"
    job.write_text(chroma_job(store_path, collection, profile="small", fail_on="critical"), encoding="utf-8")
    result = CliRunner().invoke(main, ["scan", "--config", str(job), "--json"], catch_exceptions=False)
    (line,) = result.stdout.splitlines()
    summary = json.loads(line)
    folder = tmp_path / "reports" / "demo" / collection
    report = Report.model_validate_json((folder / "report.json").read_text())
    critical = any(f.severity.value == "critical" for f in report.findings)
    assert summary["exit_code"] == result.exit_code == (1 if critical else 0), result.stderr
    assert summary["fail_on"] == "critical" and summary["records_scanned"] == 120
    (scanned,) = summary["scans"]
    assert scanned["store"] == "demo" and scanned["collection"] == collection
    assert scanned["reports"] == {"json": str(folder / "report.json"), "sarif": str(folder / "report.sarif")}
    sarif = (folder / "report.sarif").read_text()
    assert_github_accepts(sarif)
    assert artifact_uris(sarif) == {f"vdbguard/chroma/{collection}"}, "the location a CLI scan gives it"


def test_a_baseline_passes_known_findings_and_a_new_leak_still_fails(scan_args, pii_store, tmp_path: Path) -> None:
    import dataclasses
    import shutil

    from vdbguard.connectors.chroma import ChromaConnector

    code, output = run(*scan_args, "--out", str(tmp_path / "first"), "--fail-on", "low")
    first = Report.model_validate_json((tmp_path / "first" / "report.json").read_text())
    assert code == 1 and first.findings, output
    baseline = str(tmp_path / "first" / "report.json")

    code, output = run(*scan_args, "--out", str(tmp_path / "same"), "--baseline", baseline, "--fail-on", "low")
    same = Report.model_validate_json((tmp_path / "same" / "report.json").read_text())
    assert code == 0, output
    assert same.findings == [] and same.summary.records_flagged == 0
    assert same.coverage is not None and same.coverage.findings_suppressed == len(first.findings)
    assert {f.kind for f in first.findings} == {"vector", "stored_text"}, "both kinds are known, and both accepted"

    # The same store and one more record: a copy of the most severe leak under a new id.
    store = tmp_path / "store"
    shutil.copytree(pii_store[0], store)
    leak = max(first.findings, key=lambda f: f.severity.rank).record_id
    with ChromaConnector(collection=pii_store[1], path=store) as connector:
        (record,) = [r for batch in connector.iter_batches() for r in batch.records if r.id == leak]
    with ChromaConnector(collection=pii_store[1], path=store) as connector:
        connector.upsert([dataclasses.replace(record, id="note-new-leak")])
    args = [*scan_args[: scan_args.index("--path") + 1], str(store), *scan_args[scan_args.index("--path") + 2 :]]
    code, output = run(*args, "--out", str(tmp_path / "grown"), "--baseline", baseline, "--fail-on", "low")
    grown = Report.model_validate_json((tmp_path / "grown" / "report.json").read_text())
    assert code == 1, output
    new = sorted((f.record_id, f.kind) for f in grown.findings)
    assert new == [("note-new-leak", "stored_text"), ("note-new-leak", "vector")]


# -- help a person can hold in their head (#44) -----------------------------------------------------------------

EVERYDAY_OPTIONS = 20  # at most, outside "Advanced options"


def commands(command: click.Command, path: str = "vdbguard") -> Iterator[tuple[str, click.Command]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from commands(sub, f"{path} {name}")


def test_every_command_explains_every_option_keeps_the_advanced_apart_and_shows_examples() -> None:
    for path, command in commands(main):
        ctx = click.Context(command, info_name=path)
        options = [p for p in command.get_params(ctx) if isinstance(p, click.Option)]
        assert not [p.name for p in options if not p.help], f"{path}: options without help"
        everyday = [p for p in options if not getattr(p, "advanced", False) and not p.hidden and p.name != "help"]
        assert len(everyday) <= EVERYDAY_OPTIONS, f"{path}: {len(everyday)} options outside the advanced group"
        examples = command.get_help(ctx).partition("Examples:")[2]
        assert re.search(r"^ +(\S+=\S+ )?vdbguard ", examples, re.MULTILINE), f"{path}: no example in its help"


def test_flags_read_the_defaults_their_functions_declare_without_importing_them_at_load() -> None:
    declared = [
        (path, param)
        for path, command in commands(main)
        for param in command.get_params(click.Context(command))
        if isinstance(param.default, Declared)
    ]
    assert len(declared) >= 7
    owners = sorted({param.default.owner.partition(":")[0] for _, param in declared})
    loaded = subprocess.run(
        [sys.executable, "-c", f"import sys, vdbguard.cli; print([m for m in {owners} if m in sys.modules])"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert loaded.stdout.strip() == "[]", "the CLI imports a flag's owner before any command needs it"
    for path, param in declared:
        command = next(c for p, c in commands(main) if p == path)
        ctx = click.Context(command, info_name=path)
        module, _, name = param.default.owner.partition(":")
        value = inspect.signature(getattr(importlib.import_module(module), name)).parameters[param.default.name].default
        assert param.get_default(ctx) == value == param.type_cast_value(ctx, value), f"{path} {param.opts}"
        shown = f"[default: {value}" in " ".join(command.get_help(ctx).split())
        assert shown == (value is not None), f"{path} {param.opts}"


def test_help_lists_commands_in_sections_and_advanced_options_apart() -> None:
    code, output = run("--help")
    assert code == 0
    sections = re.findall(r"^(\w+) commands:$", output, re.MULTILINE)
    assert sections == ["Scan", "Protect", "Measure", "Admin"]
    scan_section = output.split("Scan commands:")[1].split("Protect commands:")[0]
    assert [line.split()[0] for line in scan_section.strip().splitlines()] == ["scan", "demo", "report", "warmup"]
    code, output = run("scan", "--help")
    everyday, _, advanced = output.partition("Advanced options:")
    assert code == 0 and "--deep-sample" in advanced and "--executor" in advanced and "--batch-size" in advanced
    assert "--deep-sample" not in everyday and "--out" in everyday and "--fail-on" in everyday
    assert "[default: high]" in " ".join(everyday.split()), "one --fail-on default everywhere"
    assert "--fail-on" not in run("demo", "--help")[1], "the demo is a showcase: it never fails on findings"


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("protect", "--to-collection", "notes", "--transform", "gaussian", "--in-place"), "add --yes to confirm"),
        (("audit", "--strength", "2"), "--strength, --fit-file, --attack and --cheap go with --transform"),
        (("calibrate", "--data", "d.jsonl", "--cheap", "--attack", "bag-of-words"), "--cheap picks the attacks"),
    ],
)
def test_a_settings_models_own_check_is_a_usage_error_before_anything_opens(
    tmp_path: Path, args: tuple[str, ...], problem: str
) -> None:
    """A command's settings model refuses a combination of flags: exit 2 naming it, no traceback, no store opened."""
    store = (
        ()
        if args[0] == "calibrate"
        else ("--connector", "chroma", "--path", str(tmp_path / "no"), "--collection", "notes")
    )
    code, output = run(*args, *store)
    assert code == 2 and "the flags have problems" in output and problem in " ".join(output.split())
    assert not (tmp_path / "no").exists()
