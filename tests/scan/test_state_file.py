"""A state file's identity and damage: a file vdbguard did not make is refused untouched, damage is named and
no row is ever shown."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import make_chroma_store
from tests.reports.test_writers import make_report
from tests.scan.test_state import digest
from vdbguard.cli import main
from vdbguard.errors import VdbguardError
from vdbguard.reports.schema import Evidence, Finding, Severity
from vdbguard.reports.spool import IN_MEMORY_FINDINGS
from vdbguard.scan import ScanStore
from vdbguard.scan.engine import finish_run
from vdbguard.scan.state import RecordRow, target_key
from vdbguard.scan.state_file import STATE_SCHEMA

SECRET = "Alice Smithson, 555-0142"  # in every finding's evidence: a message must never show it
RECORD_ID = re.compile(r"t-\d{6}")
HEADER = make_report()
TARGET = target_key(HEADER.target.connector, HEADER.target.location, HEADER.target.collection)


def flagged(record_id: str) -> RecordRow:
    evidence = Evidence(attack="pii-probe", pii_type="PERSON", score=0.9, threshold=0.5, detail="", recovered=SECRET)
    finding = Finding(
        record_id=record_id, collection="notes", severity=Severity.HIGH, pii_types=["PERSON"], evidence=[evidence]
    )
    return RecordRow(record_id, digest(record_id), attacked=True, finding=finding)


def finished_state(path: Path, findings: int) -> Path:
    """A state whose one finished scan of content version v1 flagged records t-000000... and saved its report."""
    with ScanStore(path) as store:
        run = store.begin(TARGET, "key", "v1")
        run.commit_batch("end", [flagged(f"t-{i:06d}") for i in range(findings)], [])
        result = finish_run(run, 1.0, None)
        store.save_report(HEADER.model_copy(update={"summary": result.summary}))
    return path


def rescan(state: Path) -> int:
    """An unchanged re-scan, as the engine runs it: every finding carried over and read back from the state."""
    with ScanStore(state) as store:
        run = store.begin(TARGET, "key", "v1")
        assert run.carry_unchanged()
        return sum(1 for _ in finish_run(run, 1.0, None).findings)


def render_report(state: Path, out: Path) -> tuple[int, str]:
    """`vdbguard report STATE`, which reads every finding of the state's last scan."""
    result = CliRunner().invoke(main, ["report", str(state), "--out", str(out), "--format", "json"])
    return result.exit_code, result.output


def leaks(text: str) -> list[str]:
    """Row content in ``text`` (whitespace dropped: the console may fold a long word anywhere)."""
    flat = "".join(text.split())
    return RECORD_ID.findall(flat) + [SECRET] * ("".join(SECRET.split()) in flat)


def folder_snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file and folder under ``folder`` with its bytes' hash and its mode."""
    return {
        str(item.relative_to(folder)): (
            hashlib.sha256(item.read_bytes()).hexdigest() if item.is_file() else "folder",
            item.stat().st_mode,
        )
        for item in sorted(folder.rglob("*"))
    }


@pytest.fixture(scope="module")
def big_state(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A finished state with more findings than a report holds in memory, as bytes to damage."""
    return finished_state(tmp_path_factory.mktemp("big") / "state.sqlite", IN_MEMORY_FINDINGS + 500).read_bytes()


def test_a_new_state_names_itself_in_its_header(tmp_path: Path) -> None:
    state = finished_state(tmp_path / "state.sqlite", 3)
    header = state.read_bytes()[:100]
    assert header[68:72] == b"vdbg", "PRAGMA application_id"
    assert int.from_bytes(header[60:64], "big") == STATE_SCHEMA, "PRAGMA user_version"


def test_a_state_an_earlier_vdbguard_made_still_opens_and_is_marked_as_one(tmp_path: Path) -> None:
    state = finished_state(tmp_path / "state.sqlite", 3)
    with contextlib.closing(sqlite3.connect(state)) as db:  # as vdbguard wrote it before the mark and `carried`
        db.executescript("PRAGMA application_id = 0; PRAGMA user_version = 0; DROP TABLE carried")
    assert state.read_bytes()[68:72] == bytes(4)
    with ScanStore(state) as store:
        assert [report.summary.records_flagged for report in store.latest_reports()] == [3]
    assert rescan(state) == 3
    assert state.read_bytes()[68:72] == b"vdbg"


def test_a_state_of_another_schema_is_refused_as_it_is(tmp_path: Path) -> None:
    state = finished_state(tmp_path / "state.sqlite", 3)
    with contextlib.closing(sqlite3.connect(state)) as db:
        db.execute(f"PRAGMA user_version = {STATE_SCHEMA + 1}")  # a later vdbguard's
    before = state.read_bytes()
    with pytest.raises(VdbguardError, match=f"has schema {STATE_SCHEMA + 1}") as error:
        ScanStore(state)
    assert getattr(error.value, "resumable", True) is False
    assert state.read_bytes() == before


def _sqlite_file(name: str, script: str) -> Callable[[Path], Path]:
    """Makes ``folder/name``: an SQLite file that ``script`` built."""

    def make(folder: Path) -> Path:
        path = folder / name
        with contextlib.closing(sqlite3.connect(path)) as db:
            db.executescript(script)
        return path

    return make


def _chroma_store(folder: Path) -> Path:
    make_chroma_store(folder / "store", "tickets", 20, 8, seed=0)
    return folder / "store" / "chroma.sqlite3"


def _not_sqlite(folder: Path) -> Path:
    path = folder / "notes.txt"
    path.write_text("not a database\n")
    return path


APP_TABLE = "CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('someone')"
FOREIGN: dict[str, Callable[[Path], Path]] = {
    "app database": _sqlite_file("app.db", APP_TABLE),
    "app database in WAL mode": _sqlite_file("app.db", f"PRAGMA journal_mode=WAL; {APP_TABLE}"),
    "tables named as a state's": _sqlite_file(  # but not vdbguard's schema note
        "lookalike.db",
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); CREATE TABLE runs (id INTEGER);"
        "CREATE TABLE records (id TEXT); INSERT INTO meta VALUES ('version', '2')",
    ),
    "another application id": _sqlite_file("other.db", "PRAGMA application_id = 42; CREATE TABLE t (x)"),
    "a Chroma store's own database": _chroma_store,
    "not SQLite": _not_sqlite,
    "an SQLite file without tables": _sqlite_file("empty.db", "PRAGMA user_version = 7"),
    "a folder": lambda folder: folder,
}


@pytest.mark.parametrize("make", FOREIGN.values(), ids=FOREIGN.keys())
def test_a_file_vdbguard_did_not_make_is_refused_and_left_byte_identical(
    tmp_path: Path, make: Callable[[Path], Path]
) -> None:
    folder = tmp_path / "theirs"
    folder.mkdir()
    foreign = make(folder)
    before = folder_snapshot(tmp_path)
    with pytest.raises(VdbguardError, match="is not a vdbguard state file") as error:
        ScanStore(foreign)
    assert str(foreign) in error.value.message and "new --state path" in str(error.value.hint)
    assert getattr(error.value, "resumable", True) is False
    assert folder_snapshot(tmp_path) == before, "no byte, mode, lock, journal or table added"


def test_a_scan_given_the_audited_stores_own_database_as_its_state_refuses_it_and_writes_nothing(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    make_chroma_store(store, "tickets", 20, 384, seed=1)
    before = folder_snapshot(store)
    scan = ["scan", "--connector", "chroma", "--path", str(store), "--collection", "tickets", "--profile", "small"]
    options = ["--state", str(store / "chroma.sqlite3"), "--out", str(tmp_path / "out"), "--format", "json"]
    result = CliRunner().invoke(main, scan + options)
    output = " ".join(result.output.split())
    assert result.exit_code == 2, output
    assert "is not a vdbguard state file" in output and "unexpected error" not in output
    assert folder_snapshot(store) == before


def _zero_middle_page(data: bytes) -> bytes:
    middle = len(data) // 4096 // 2 * 4096
    return data[:middle] + bytes(4096) + data[middle + 4096 :]


def _finding_of_t41(data: bytes) -> int:
    at = data.find(b'{"record_id":"t-000041"')
    assert at > 0 and data.count(b'{"record_id":"t-000041"') == 1, "one live row to damage"
    return at


def _not_utf8(data: bytes) -> bytes:
    at = data.index(SECRET.encode(), _finding_of_t41(data))
    return data[:at] + b"\xff" + data[at + 1 :]


def _broken_json(data: bytes) -> bytes:
    at = _finding_of_t41(data)
    return data[:at] + b"z" + data[at + 1 :]  # `{` with one bit flipped


def _renamed_field(data: bytes) -> bytes:
    at = _finding_of_t41(data) + 2
    return data[:at] + b"R" + data[at + 1 :]  # "record_id" -> "Record_id": the finding lacks its record id


DAMAGE: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "a zeroed page": (_zero_middle_page, "SQLite"),
    "a byte that is not UTF-8": (_not_utf8, "records table"),
    "broken JSON": (_broken_json, "records table"),
    "a field renamed": (_renamed_field, "records table"),
}


@pytest.fixture(params=DAMAGE.values(), ids=DAMAGE.keys())
def damaged_state(request: pytest.FixtureRequest, tmp_path: Path, big_state: bytes) -> tuple[Path, str]:
    """The big state with one kind of damage, and what the error must name as damaged."""
    damage, named = request.param
    state = tmp_path / "state.sqlite"
    state.write_bytes(damage(big_state))
    return state, named


def test_a_damaged_state_rescanned_is_a_named_error_that_shows_no_row(damaged_state: tuple[Path, str]) -> None:
    state, named = damaged_state
    with pytest.raises(VdbguardError, match=f"the state file {re.escape(str(state))} is damaged") as error:
        rescan(state)
    assert named in error.value.message and "move it aside" in str(error.value.hint)
    assert not leaks(str(error.value)), error.value
    assert error.value.__cause__ is None and error.value.__suppress_context__, "the row's own error quotes the row"
    assert getattr(error.value, "resumable", True) is False


def test_a_damaged_state_rendered_is_a_named_error_that_shows_no_row(
    tmp_path: Path, damaged_state: tuple[Path, str]
) -> None:
    state, named = damaged_state
    code, output = render_report(state, tmp_path / "out")
    flat = " ".join(output.split())
    assert code == 2, flat
    assert "is damaged" in flat and named in flat and "move it aside" in flat and "unexpected error" not in flat
    assert not leaks(output), flat


def test_the_undamaged_state_reads_back_whole(tmp_path: Path, big_state: bytes) -> None:
    """The damage tests' control: the same bytes undamaged give every finding."""
    state = tmp_path / "state.sqlite"
    state.write_bytes(big_state)
    assert render_report(state, tmp_path / "out")[0] == 0
    assert len(json.loads((tmp_path / "out" / "report.json").read_text())["findings"]) == IN_MEMORY_FINDINGS + 500
    assert rescan(state) == IN_MEMORY_FINDINGS + 500


def test_a_scan_that_reads_a_damaged_finding_names_it_without_the_row_or_a_resume_hint(
    pii_store, small_attacks, tmp_path: Path
) -> None:
    store, collection, _ = pii_store
    state = tmp_path / "scan.sqlite"
    scan = ["scan", "--connector", "chroma", "--path", str(store), "--collection", collection, "--profile", "small"]
    scan += ["--state", str(state), "--format", "json"]
    first = CliRunner().invoke(main, [*scan, "--out", str(tmp_path / "first")])
    assert first.exit_code == 1, first.output
    record_id = json.loads((tmp_path / "first" / "report.json").read_text())["findings"][0]["record_id"]
    row = b'{"record_id":' + json.dumps(record_id).encode()
    assert row in state.read_bytes()
    state.write_bytes(state.read_bytes().replace(row, b"\xff" + row[1:]))  # every copy, the live row's among them

    again = CliRunner().invoke(main, [*scan, "--out", str(tmp_path / "again")])  # the same content: all carried
    output = " ".join(again.output.split())
    assert again.exit_code == 2, output
    assert "is damaged" in output and "records table" in output and "unexpected error" not in output
    assert "resume" not in output, "running the same command again meets the same damage"
    assert record_id not in "".join(again.output.split())
