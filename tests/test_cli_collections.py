"""`vdbguard scan --collection '*'`, a list or globs: every matching collection scanned, one report folder each, one
state for all, and a store summary that says which collections hold the risk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.reports.test_markdown import Rendered
from vdbguard.cli import main
from vdbguard.demo import demo_texts
from vdbguard.records import VectorRecord
from vdbguard.reports.schema import Report, Severity
from vdbguard.reports.store_summary import JSON_FILE, MARKDOWN_FILE

CLEAN_TEXTS = [
    "The quarterly inventory count for the east warehouse was updated.",
    "Shelf labels in aisle four were replaced after the audit.",
    "The team agreed to move the weekly sync to Thursday mornings.",
    "Printer paper and toner were reordered for the second floor.",
    "The office kitchen will be cleaned on Friday afternoon.",
    "Release notes for version two of the internal dashboard are ready.",
    "Parking spaces near the loading dock are reserved for deliveries.",
    "The fire drill is scheduled for next month, after the holidays.",
]
COLLECTIONS = {"notes_hr": 0, "notes_public": None, "tickets": 1}  # name -> seed of its PII notes; None: clean


@pytest.fixture(scope="module")
def three_collections(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:
    """An embedded Chroma store: two collections of notes, half of them with PII, and one of plain office notes."""
    from vdbguard.connectors.chroma import ChromaConnector

    store = tmp_path_factory.mktemp("three") / "store"
    for name, seed in COLLECTIONS.items():
        texts = [text for text, _ in demo_texts(24, seed=seed)] if seed is not None else CLEAN_TEXTS
        vectors = embedder.encode(texts)
        records = [
            VectorRecord(id=f"{name}-{i:03d}", vector=vector, payload={"kind": "note"}, text=text)
            for i, (text, vector) in enumerate(zip(texts, vectors, strict=True))
        ]
        with ChromaConnector(collection=name, path=store, create=True) as connector:
            connector.upsert(records)
    return store


def scan(store: Path, collection: str, out: Path, *extra: str) -> tuple[int, str, str]:
    """Exit code, everything printed, and stdout alone."""
    arguments = ["scan", "--connector", "chroma", "--path", str(store), "--collection", collection]
    result = CliRunner().invoke(main, [*arguments, "--profile", "small", "--out", str(out), *extra])
    return result.exit_code, result.output, result.stdout


def report_in(folder: Path) -> Report:
    return Report.model_validate_json((folder / "report.json").read_text())


def test_every_collection_gets_its_own_report_folder_and_the_summary_ranks_them(
    three_collections: Path, small_attacks, tmp_path: Path
) -> None:
    state = tmp_path / "state.sqlite"
    code, output, _ = scan(three_collections, "*", tmp_path / "all", "--state", str(state))
    assert code == 1, output
    reports = {name: report_in(tmp_path / "all" / name) for name in COLLECTIONS}
    assert not (tmp_path / "all" / "report.json").exists(), "a scan of several writes no report of its own"
    for name, report in reports.items():
        assert report.target.collection == name
        assert report.summary.records_scanned == (len(CLEAN_TEXTS) if COLLECTIONS[name] is None else 24)
    summary = json.loads((tmp_path / "all" / JSON_FILE).read_text())
    rows = summary["collections"]
    assert {row["collection"] for row in rows} == set(COLLECTIONS)
    for row in rows:
        report = reports[row["collection"]]
        worst = max((f.severity for f in report.iter_findings()), key=lambda s: s.rank, default=None)
        assert row["highest_severity"] == (worst.value if worst else None)
        assert row["records_scanned"] == report.summary.records_scanned
        assert row["records_with_findings"] == len({f.record_id for f in report.iter_findings()})
        assert row["reports"] == str(tmp_path / "all" / row["collection"])
        risky = {f.record_id for f in report.iter_findings() if f.severity in (Severity.HIGH, Severity.CRITICAL)}
        assert row["sensitivity"] == round(len(risky) / report.summary.records_scanned, 6)
    assert [row["collection"] for row in rows][-1] == "notes_public", "the clean collection ranks last"
    assert rows[0]["highest_severity"] in ("high", "critical") and rows[0]["sensitivity"] > 0
    ranks = [(Severity(r["highest_severity"]).rank if r["highest_severity"] else -1, r["sensitivity"]) for r in rows]
    assert ranks == sorted(ranks, reverse=True), "the riskiest first: highest severity, then sensitivity"
    markdown = Rendered((tmp_path / "all" / MARKDOWN_FILE).read_text())
    assert [cell for cell in markdown.code if cell in COLLECTIONS] == [row["collection"] for row in rows]
    assert "vdbguard: collections, riskiest first" in output

    code, output, _ = scan(three_collections, "notes_*", tmp_path / "notes", "--state", str(state))
    assert code == 1, output
    assert sorted(p.name for p in (tmp_path / "notes").iterdir() if p.is_dir()) == ["notes_hr", "notes_public"]
    rows = json.loads((tmp_path / "notes" / JSON_FILE).read_text())["collections"]
    assert [row["collection"] for row in rows] == ["notes_hr", "notes_public"]
    for name in ("notes_hr", "notes_public"):
        again = report_in(tmp_path / "notes" / name)
        assert again.coverage is not None and again.coverage.records_attacked == 0, "one state serves them all"
        assert [f.record_id for f in again.iter_findings()] == [f.record_id for f in reports[name].iter_findings()]


def test_a_list_of_names_and_globs_scans_each_match_once(
    three_collections: Path, small_attacks, tmp_path: Path
) -> None:
    code, output, stdout = scan(
        three_collections, "tickets, notes_p*,tickets", tmp_path, "--json", "--fail-on", "never"
    )
    assert code == 0, output
    (line,) = stdout.splitlines()
    scanned = [entry["collection"] for entry in json.loads(line)["scans"]]
    assert scanned == ["tickets", "notes_public"], "in the order named, each once"
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["notes_public", "tickets"]


def test_a_glob_that_matches_nothing_fails_naming_what_the_store_holds(three_collections: Path, tmp_path: Path) -> None:
    code, output, _ = scan(three_collections, "invoices_*", tmp_path / "out")
    flat = " ".join(output.split())
    assert code == 2, output
    assert "matches 'invoices_*'" in flat and "existing collections: notes_hr, notes_public, tickets" in flat
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir()), "nothing scanned or written"
    assert "Traceback" not in output


def test_a_job_files_globs_scan_what_they_match_into_the_stores_folder(
    three_collections: Path, small_attacks, tmp_path: Path
) -> None:
    job = tmp_path / "job.toml"
    job.write_text(
        f'[job]\nprofile = "small"\nfail_on = "never"\n\n[[stores]]\nname = "office"\nconnector = "chroma"\n'
        f'path = "{three_collections}"\ncollections = ["tickets", "notes_*"]\n\n[output]\ndir = "reports"\n'
    )
    result = CliRunner().invoke(main, ["scan", "--config", str(job)])
    assert result.exit_code == 0, result.output
    folders = sorted(p.name for p in (tmp_path / "reports" / "office").iterdir())
    assert folders == ["notes_hr", "notes_public", "tickets"]
    rows = json.loads((tmp_path / "reports" / JSON_FILE).read_text())["collections"]
    assert {(row["store"], row["collection"]) for row in rows} == {("office", name) for name in COLLECTIONS}


def test_one_collection_that_fails_stops_no_other_and_is_named_in_the_summary(
    embedder, small_attacks, tmp_path: Path
) -> None:
    """A collection another model made (128-d vectors, not MiniLM's 384) cannot be scanned with --embedder's model:
    the scan of every collection goes on, writes the summary, names the failure in it and exits 2."""
    import numpy as np
    from vdbguard.connectors.chroma import ChromaConnector

    store = tmp_path / "store"
    other_model = np.random.default_rng(0).normal(size=(len(CLEAN_TEXTS), 128))
    for name, rows in {"a_other_model": other_model, "b_office": embedder.encode(CLEAN_TEXTS)}.items():
        pairs = enumerate(zip(CLEAN_TEXTS, rows, strict=True))
        records = [VectorRecord(id=f"{name}-{i}", vector=vector, text=text) for i, (text, vector) in pairs]
        with ChromaConnector(collection=name, path=store, create=True) as connector:
            connector.upsert(records)
    code, output, stdout = scan(store, "*", tmp_path / "out", "--json", "--fail-on", "never")
    assert code == 2, output
    assert "a_other_model: the collection stores 128-d vectors" in " ".join(output.split())
    assert report_in(tmp_path / "out" / "b_office").summary.records_scanned == len(CLEAN_TEXTS), "scanned after it"
    summary = json.loads((tmp_path / "out" / JSON_FILE).read_text())
    assert [row["collection"] for row in summary["collections"]] == ["b_office"]
    (failed,) = summary["failed"]
    assert failed["collection"] == "a_other_model" and "128-d" in failed["error"] and failed["hint"]
    assert summary["totals"]["collections_failed"] == 1
    assert "a_other_model" in (tmp_path / "out" / MARKDOWN_FILE).read_text()
    (line,) = stdout.splitlines()
    document = json.loads(line)
    assert document["exit_code"] == 2 and [f["collection"] for f in document["failed_collections"]] == ["a_other_model"]


def test_one_collection_by_name_and_a_pattern_share_the_state_and_keep_what_an_earlier_key_judged(
    three_collections: Path, small_attacks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scan's flags make one job, whether --collection names one collection or several. Before, a job keyed its
    empty allow list and severity policy apart from a one-collection scan's none, and `scan` keyed a store by its
    --path as written: the verdicts a state keeps under those keys are kept."""
    from vdbguard.scan.settings import ConfigPolicy, ScanTarget

    state = tmp_path / "state.sqlite"
    monkeypatch.chdir(three_collections.parent)
    with monkeypatch.context() as patch:  # the keys of before
        patch.setattr(ConfigPolicy, "of_job", classmethod(lambda cls, config: cls(config.allow, {})))
        written = classmethod(lambda cls, config, store: cls(store.connector, str(config.resolve(store.path))))
        patch.setattr(ScanTarget, "of_store", written)
        code, output, _ = scan(Path(three_collections.name), "notes_*", tmp_path / "before", "--state", str(state))
    assert code == 1 and "attacked 24 new or changed records" in output and "attacked 8 new" in output, output
    code, output, _ = scan(Path(three_collections.name), "notes_hr", tmp_path / "one", "--state", str(state))
    assert code == 1 and "attacked 0 new or changed records, carried 24 over" in output, output
    assert report_in(tmp_path / "one").summary == report_in(tmp_path / "before" / "notes_hr").summary
    code, output, _ = scan(Path(three_collections.name), "*", tmp_path / "all", "--state", str(state))
    assert output.count("attacked 0 new or changed records") == 2, "the notes carried over"
    assert "attacked 24 new or changed records, carried 0 over" in output, "tickets, never scanned, attacked"
    code, output, _ = scan(three_collections, "*", tmp_path / "absolute", "--state", str(state))
    assert output.count("attacked 0 new or changed records") == 3, "a store is one target however its path is written"


def test_a_calibration_folder_is_for_one_collection(three_collections: Path, tmp_path: Path) -> None:
    for flag in ("--save-calibration", "--load-calibration"):
        code, output, _ = scan(three_collections, "notes_*", tmp_path / "out", flag, str(tmp_path))
        assert code == 2 and f"({flag}) is for a job of one collection" in output, output
        assert not (tmp_path / "out").exists(), "refused before anything is scanned"


def test_a_scan_of_one_collection_of_several_and_of_a_job_file_take_one_run_path(
    three_collections: Path, small_attacks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`scan`'s flags build a job as a job file does, and every job runs through `run_job`: the settings and their
    defaults live in one schema, the job file's."""
    from vdbguard.config import JobConfig
    from vdbguard.scan import job

    jobs: list[JobConfig] = []
    run_job = job.run_job
    monkeypatch.setattr(job, "run_job", lambda config, **kw: jobs.append(config) or run_job(config, **kw))
    job_file = tmp_path / "vdbguard.toml"
    job_file.write_text(
        f'[job]\nprofile = "small"\n[[stores]]\nconnector = "chroma"\npath = "{three_collections}"\n'
        f'collections = ["notes_hr"]\n[output]\ndir = "{tmp_path / "job"}"\n'
    )
    assert scan(three_collections, "notes_hr", tmp_path / "one")[0] == 1
    assert scan(three_collections, "notes_*", tmp_path / "several")[0] == 1
    result = CliRunner().invoke(main, ["scan", "--config", str(job_file)])
    assert result.exit_code == 1, result.output
    assert [config.stores[0].collections for config in jobs] == [["notes_hr"], ["notes_*"], ["notes_hr"]]
    assert jobs[0].job == jobs[2].job.model_copy(update={"name": jobs[0].job.name}), "same settings, same job"
    assert report_in(tmp_path / "one").summary == report_in(tmp_path / "job" / "chroma" / "notes_hr").summary
