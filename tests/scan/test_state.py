"""The job state on its own: looking a page up, and closing a run that stopped halfway through closing."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from vdbguard.reports.schema import Finding, Severity
from vdbguard.scan import ScanStore
from vdbguard.scan.engine import finish_run
from vdbguard.scan.state import RecordRow, Run


def digest(content: str) -> bytes:
    return hashlib.blake2b(content.encode(), digest_size=16).digest()


def row(record_id: str, flagged: bool = False) -> RecordRow:
    finding = Finding(record_id=record_id, collection="c", severity=Severity.HIGH, pii_types=["PERSON"], evidence=[])
    return RecordRow(record_id, digest(record_id), attacked=True, finding=finding if flagged else None)


def finished_run(store: ScanStore, *rows: RecordRow) -> None:
    run = store.begin("t", "key")
    run.commit_batch("end", list(rows), [])
    finish_run(run, 1.0, None)


def test_a_page_is_looked_up_at_once_and_a_hash_two_ids_share_falls_back_to_the_file(tmp_path: Path) -> None:
    with ScanStore(tmp_path / "state.sqlite") as store:
        finished_run(store, row("a"), row("b"), row("c"))
        run = store.begin("t", "key")
        ids, digests = ["a", "b", "c", "new"], [digest("a"), digest("b, changed"), digest("c"), digest("new")]
        seen = run.lookup(ids, digests)
        assert seen.judged == {"a": digest("a"), "b": digest("b"), "c": digest("c")}, "b's verdict is of before"
        assert not seen.held and not seen.deep_pending
        assert run._current is not None
        run._current.hashes[:] = run._current.hashes[0]  # as if every id had one hash
        assert run.lookup(ids, digests) == seen
        run.commit_batch("1", [row("new")], ["a"])
        assert run.lookup(["new", "a"], [digest("new"), digest("a")]).held == {"new": digest("new")}
        assert store.begin("u", "key").lookup(ids, digests).judged == {}, "another target's records are not these"
        assert store.begin("t", "other key").lookup(ids, digests).judged == {}, "nor are verdicts of other settings"


def test_a_run_stopped_after_settling_resumes_and_closes_with_the_same_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.sqlite"
    with ScanStore(path) as store:
        finished_run(store, row("gone", flagged=True), row("kept", flagged=True), row("other"))

    def stopped(self: Run, *args: object) -> None:
        raise KeyboardInterrupt

    with ScanStore(path) as store, monkeypatch.context() as patch:
        patch.setattr(Run, "finish", stopped)
        run = store.begin("t", "key")
        run.commit_batch("end", [], ["kept", "other"])
        with pytest.raises(KeyboardInterrupt):
            finish_run(run, 1.0, None)
    with ScanStore(path) as store:
        resumed = store.begin("t", "key")
        assert resumed.resumed and resumed.settled
        result = finish_run(resumed, 1.0, None)
    assert result.coverage.findings_resolved == 1, "the deleted record's finding, counted when it was dropped"
    assert (result.summary.records_scanned, result.coverage.records_carried_over) == (2, 2)
    assert [f.record_id for f in result.findings] == ["kept"]
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM carried").fetchone()[0] == 0


def test_a_run_served_every_record_it_began_with_drops_none_without_a_pass_and_one_not_served_is_dropped(
    tmp_path: Path,
) -> None:
    with ScanStore(tmp_path / "state.sqlite") as store:
        finished_run(store, row("a", flagged=True), row("b"))
        statements: list[str] = []
        store.db.set_trace_callback(statements.append)

        def rescan(*ids: str) -> tuple[int, int]:
            statements.clear()
            run = store.begin("t", "key")
            run.commit_batch("end", [], list(run.lookup(ids, [digest(r) for r in ids]).judged))
            result = finish_run(run, 1.0, None)
            return result.summary.records_scanned, result.coverage.findings_resolved

        assert rescan("b", "a") == (2, 0)
        assert not [s for s in statements if "DELETE FROM records" in s], "every record served: nothing to look for"
        assert rescan("b") == (1, 1), "a, not served, is dropped and its finding resolved"
        assert [s for s in statements if "DELETE FROM records" in s]
