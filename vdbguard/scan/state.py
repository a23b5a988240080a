"""A scan job's state in one SQLite file: incremental re-scans, crash-safe resumes and run history.

Per collection ("target") the file keeps each run and, per record, a digest of its vector, payload and
text with the verdict last given to it and the key of the settings that gave it. A re-scan attacks only
records whose digest or verdict key changed and carries the others over; records not seen by a finished
run were deleted, so their findings are resolved. Every batch commits in one transaction with the
connector's cursor: a run killed at any moment resumes after the last committed batch, and because a
record's row names the run that counted it, nothing is skipped or counted twice.

Without a state file the same code runs on a temporary database, so every scan takes one path.

Whose file it is, and what damage in it is called, is :mod:`vdbguard.scan.state_file`'s.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from vdbguard.cache import ScratchDir
from vdbguard.errors import VdbguardError
from vdbguard.reports.schema import STORED_TEXT, VECTOR, Finding, RecordProblem, Report, RunSummary, Summary
from vdbguard.reports.spool import IN_MEMORY_FINDINGS, FindingSpool
from vdbguard.scan.state_file import (
    APPLICATION_ID,
    DAMAGE,
    STATE_SCHEMA,
    Kind,
    StateFileError,
    closed_unchanged,
    create_owner_only,
    damage_named,
    hold_lock,
    identify,
    make_owner_only,
    quick_check,
    raise_named,
    reads,
)

log = logging.getLogger(__name__)

LOOKUP_CHUNK = 500  # ids per statement: under SQLite's oldest bound of 999 variables
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    target TEXT NOT NULL,
    verdict_key TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    abandoned INTEGER NOT NULL DEFAULT 0,
    cursor TEXT,
    deep_records INTEGER NOT NULL DEFAULT 0,
    deep_seconds REAL NOT NULL DEFAULT 0,
    deep_exhausted INTEGER NOT NULL DEFAULT 0,
    findings_resolved INTEGER NOT NULL DEFAULT 0,
    records_attacked INTEGER NOT NULL DEFAULT 0,
    summary TEXT,
    report TEXT,
    hidden TEXT,
    content_version TEXT,
    settled INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS records (
    target TEXT NOT NULL,
    record_id TEXT NOT NULL,
    digest BLOB,
    verdict_key TEXT,
    run_id INTEGER NOT NULL,
    attacked_run INTEGER,
    has_text INTEGER NOT NULL DEFAULT 0,
    has_pii INTEGER NOT NULL DEFAULT 0,
    deep INTEGER NOT NULL DEFAULT 0,
    deep_wanted INTEGER NOT NULL DEFAULT 0,
    finding TEXT,
    problem TEXT,
    text_finding TEXT,
    PRIMARY KEY (target, record_id)
) WITHOUT ROWID;
-- records.run_id is the run that last wrote the record. A run's records are those it wrote and those it carried over,
-- listed here in the order a store hands them out: marking each in records as it was read wrote every page of the
-- records table once per batch when ids come in no sorted order (UUIDs), and marking them all at the end rewrote
-- the table. Run.settle drops the records the run did not see; from then on every record of the target is the run's.
CREATE TABLE IF NOT EXISTS carried (run_id INTEGER NOT NULL, record_id TEXT NOT NULL);
-- an index on (target, run_id), dropped from older files: it cost every carried record an index rewrite, and the
-- counts read all of a target's records anyway
DROP INDEX IF EXISTS records_by_run;
"""


def suppression_key(finding: Finding) -> str:
    """A finding's key among the types suppressions left open: its record id (a vector finding, as before
    stored-text findings came) or the kind and the id."""
    return finding.record_id if finding.kind == VECTOR else f"{finding.kind}:{finding.record_id}"


def restrict(finding: Finding, open_types: dict[str, list[str]]) -> Finding | None:
    """The finding with only the PII types a suppression left open (``open_types`` by ``suppression_key``)."""
    key = suppression_key(finding)
    if key not in open_types:
        return finding
    types = open_types[key]
    if not types:
        return None
    evidence = [e for e in finding.evidence if e.pii_type in types]
    return finding.model_copy(update={"pii_types": types, "evidence": evidence})


def target_key(connector: str, location: str, collection: str) -> str:
    """One collection's key in the state: the same store and collection whatever the run's other flags."""
    return f"{connector}:{location}:{collection}"


def verdict_key(settings: dict[str, Any]) -> str:
    """A short key over everything that changes a verdict (embedder, attacks and versions, thresholds...)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


class Seen(NamedTuple):
    """What the state knows about a page's records: those this run already took (attacked, or carried over as the
    run's index found them), each with the digest it took; the digest each other one had when its verdict (under
    this run's key) was made; and those of them still waiting for the deep tier."""

    held: dict[str, bytes | None]
    judged: dict[str, bytes | None]
    deep_pending: set[str]


DUPLICATE_ID = "duplicate id"  # the field of a record problem that names a second record under one id: not skipped
TAKEN_CHANGED = b"changed"  # equal to no digest: what Seen.held says of an id the run took with another digest


class CurrentDigests:
    """The digest of every record whose verdict was current under a run's key when the run began, 25 bytes a
    record, so that a page whose records are unchanged is looked up at once: Python's hash of each id, sorted, with
    the digest beside it. Where two ids share a hash, or a record is not here, the page falls back to the file.

    It also notes which of these ids the store served, so that a run that began with every record indexed and was
    served every one of them knows, without a pass over the file, that none was deleted. An id of another record
    with the same hash (one chance in 2**64 a pair) would keep a deleted record one run longer."""

    FETCH = 65_536

    def __init__(self, db: sqlite3.Connection, target: str, key: str, run_id: int) -> None:
        where = (
            "FROM records WHERE target = ? AND verdict_key IS ? AND run_id != ? AND NOT (deep_wanted AND NOT deep) "
            "AND length(digest) = 16"
        )
        params = (target, key, run_id)
        count = db.execute(f"SELECT COUNT(*) {where}", params).fetchone()[0]
        hashes, digests = np.empty(count, np.int64), np.empty((count, 2), np.uint64)
        rows, end = db.execute(f"SELECT record_id, digest {where}", params), 0
        for start in range(0, count, self.FETCH):
            chunk = rows.fetchmany(min(self.FETCH, count - start))
            end = start + len(chunk)
            hashes[start:end] = [hash(record_id) for record_id, _ in chunk]
            digests[start:end] = np.frombuffer(b"".join(digest for _, digest in chunk), np.uint64).reshape(-1, 2)
        order = np.argsort(hashes[:end], kind="stable")
        self.hashes, self.digests = hashes[order], digests[order]
        self.served = np.zeros(len(order), dtype=bool)
        self.carried = np.zeros(len(order), dtype=bool)  # served with the digest indexed: carried over
        self.changed = np.zeros(len(order), dtype=bool)  # served first with another digest: attacked under the id
        held = db.execute("SELECT COUNT(*) FROM records WHERE target = ? AND run_id != ?", (target, run_id))
        self.holds_all = held.fetchone()[0] == len(order)

    def current(self, record_ids: Sequence[str], digests: Sequence[bytes]) -> tuple[np.ndarray, dict[str, bytes]]:
        """Which of these records, with these 16-byte digests, have a current verdict for sure; and those this run
        already took under the same id as another record (one id held by two), with what it took: the digest it
        carried over, or ``TAKEN_CHANGED`` where it took the id changed (to attack it)."""
        joined = b"".join(digests)
        if not len(self.hashes) or len(joined) != 16 * len(record_ids):
            return np.zeros(len(record_ids), dtype=bool), {}
        wanted = np.fromiter((hash(record_id) for record_id in record_ids), np.int64, len(record_ids))
        at = np.minimum(np.searchsorted(self.hashes, wanted), len(self.hashes) - 1)
        page = np.frombuffer(joined, np.uint64).reshape(-1, 2)
        known = self.hashes[at] == wanted
        self.served[at[known]] = True
        same = known & (self.digests[at] == page).all(axis=1)
        hits = same & ~self.changed[at]
        taken = {record_ids[i]: TAKEN_CHANGED for i in np.flatnonzero(same & self.changed[at])}
        carried_other = np.flatnonzero(known & ~same & self.carried[at])
        taken |= {record_ids[i]: self.digests[at[i]].tobytes() for i in carried_other}
        self.carried[at[hits]] = True
        self.changed[at[known & ~same & ~self.carried[at]]] = True
        return hits, taken

    def every_record_served(self) -> bool:
        """Whether the run began with every record of the target indexed here and was served each of them since."""
        return self.holds_all and bool(self.served.all())


@dataclass
class RecordRow:
    """One record's outcome in this run, written with its batch."""

    record_id: str
    digest: bytes | None
    attacked: bool
    has_text: bool = False
    has_pii: bool = False
    deep: bool = False
    deep_wanted: bool = False
    finding: Finding | None = None
    problem: RecordProblem | None = None
    text_finding: Finding | None = None  # PII or a secret kept in the stored text


class _StateFindings(FindingSpool):
    """Findings spooled from the state, validated only when read back (a report writer streams them): a finding
    row damaged on disk is named there like any other damage."""

    def __init__(self, path: Path, lines: Iterable[str]) -> None:
        self.path = path
        super().__init__(lines)

    def __iter__(self) -> Iterator[Finding]:
        try:
            yield from super().__iter__()
        except ValueError as exc:
            raise_named(self.path, exc, "records")


class ScanStore:
    """One job's state file (or a temporary one). Use as a context manager."""

    def __init__(self, path: Path | None) -> None:
        self._tmp: ScratchDir | None = None
        if path is None:
            self._tmp = ScratchDir("state")
            path = self._tmp.path / "state.sqlite"
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock: int | None = None
        try:
            self._open(path)
        except BaseException:
            self._unlock()
            raise

    def _open(self, path: Path) -> None:
        try:
            kind = identify(path)  # before the lock file, the mode or SQLite touch anything
            self._lock = None if self._tmp is not None else hold_lock(path)
            create_owner_only(path)
            self.db = sqlite3.connect(path, isolation_level=None)
            try:
                if kind != "new":
                    quick_check(self.db, path)
                self._check_schema(kind)
            except BaseException:
                self.db.close()  # a refused state keeps no -wal or -shm file beside it
                raise
            make_owner_only(path)
        except (*DAMAGE, OSError) as exc:
            raise_named(path, exc)

    def _unlock(self) -> None:
        if self._lock is not None:
            os.close(self._lock)  # releases the flock
            self._lock = None

    def _check_schema(self, kind: Kind) -> None:
        """Check the schema version, mark a new or earlier vdbguard's file as a state before anything else is
        written to it, then bring its tables up to date."""
        application_id = self.db.execute("PRAGMA application_id").fetchone()[0]
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        claim = application_id != APPLICATION_ID  # a new file, or an earlier vdbguard's state
        if claim:
            version = STATE_SCHEMA
            if kind == "older":
                version = int(self.db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0])
        if version != STATE_SCHEMA:
            raise StateFileError(
                f"state file {self.path} has schema {version}, this vdbguard writes {STATE_SCHEMA}",
                "use a new state file (the old one's findings are in its last report)",
            )
        if claim:  # in the main file itself while it is new: WAL mode comes after
            with self._transaction() as db:
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                db.execute(f"PRAGMA user_version = {STATE_SCHEMA}")
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)
        columns = {column for _, column, *_ in self.db.execute("PRAGMA table_info(runs)")}
        if "content_version" not in columns:
            self.db.execute("ALTER TABLE runs ADD COLUMN content_version TEXT")  # files from before it
        if "settled" not in columns:
            self.db.execute("ALTER TABLE runs ADD COLUMN settled INTEGER NOT NULL DEFAULT 0")
        if "text_finding" not in {column for _, column, *_ in self.db.execute("PRAGMA table_info(records)")}:
            self.db.execute("ALTER TABLE records ADD COLUMN text_finding TEXT")  # stored-text findings, files before
        self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(STATE_SCHEMA),))  # read by older ones

    def __enter__(self) -> ScanStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()
        self._unlock()
        if self._tmp is not None:
            self._tmp.drop()
        else:
            closed_unchanged(self.path)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """All or nothing: a write the disk refuses leaves the state as the last committed batch left it."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back already
                    self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")
            raise_named(self.path, exc)

    def save_report(self, report: Report, hidden: dict[str, list[str]] | None = None) -> None:
        """Keep the finished run's report header (findings stay in the records table, never twice), so
        `vdbguard report STATE` re-renders it without a re-scan. ``hidden``: record id -> the PII types
        left open by suppressions (none: the finding is hidden)."""
        target = target_key(report.target.connector, report.target.location, report.target.collection)
        header = report.model_copy(update={"findings": [], "record_problems": []})
        with self._transaction() as db:
            db.execute(
                "UPDATE runs SET report = ?, hidden = ? "
                "WHERE id = (SELECT MAX(id) FROM runs WHERE target = ? AND finished_at IS NOT NULL)",
                (header.model_dump_json(), json.dumps(hidden or {}), target),
            )

    @reads("runs")
    def latest_report(self, target: str, *, with_findings: bool = False) -> Report | None:
        """The last finished run's report; its header only unless ``with_findings``."""
        row = self.db.execute(
            "SELECT id, report, hidden FROM runs WHERE target = ? AND report IS NOT NULL ORDER BY id DESC LIMIT 1",
            (target,),
        ).fetchone()
        if row is None:
            return None
        run_id, header, hidden = row
        report = Report.model_validate_json(header)
        if not with_findings:
            return report
        rows = self.db.execute(
            "SELECT finding, text_finding, problem FROM records WHERE target = ? AND attacked_run <= ? "
            "AND (finding IS NOT NULL OR text_finding IS NOT NULL OR problem IS NOT NULL) ORDER BY record_id",
            (target, run_id),
        )
        open_types = json.loads(hidden or "{}")
        spool, problems = FindingSpool(), []
        with damage_named(self.path, "records"):
            for finding, text_finding, problem in rows:
                for kind in (finding, text_finding):
                    kept = None if kind is None else restrict(Finding.model_validate_json(kind), open_types)
                    if kept is not None:
                        spool.append(kept)
                if problem is not None:
                    problems.append(RecordProblem.model_validate_json(problem))
        report = report.model_copy(update={"record_problems": problems})
        return (
            report.spooled(spool)
            if len(spool) > IN_MEMORY_FINDINGS
            else report.model_copy(update={"findings": list(spool)})
        )

    @reads("runs")
    def report_of_content(self, content_version: str) -> Report | None:
        """The header of the last finished run's report that read this content version, if any."""
        row = self.db.execute(
            "SELECT report FROM runs WHERE content_version = ? AND report IS NOT NULL ORDER BY id DESC LIMIT 1",
            (content_version,),
        ).fetchone()
        return None if row is None else Report.model_validate_json(row[0])

    @reads("runs")
    def latest_reports(self) -> list[Report]:
        """The last finished run's report of every target in this state file, findings included."""
        targets = [t for (t,) in self.db.execute("SELECT DISTINCT target FROM runs WHERE report IS NOT NULL")]
        return [r for t in sorted(targets) if (r := self.latest_report(t, with_findings=True)) is not None]

    @reads("runs")
    def adopt_target(self, former: str, target: str) -> bool:
        """Runs and records kept under ``former``, a key an earlier version gave this target, move to ``target``
        when it has none of its own; whether they did."""
        with self._transaction() as db:
            if former == target or db.execute("SELECT 1 FROM runs WHERE target = ?", (target,)).fetchone():
                return False
            if db.execute("SELECT 1 FROM runs WHERE target = ?", (former,)).fetchone() is None:
                return False
            log.info("the runs of %s are kept under its absolute path, %s", former, target)
            db.execute("UPDATE runs SET target = ? WHERE target = ?", (target, former))
            db.execute("UPDATE records SET target = ? WHERE target = ?", (target, former))
            return True

    @reads("runs")
    def adopt_key(self, target: str, old: str, new: str) -> None:
        """Records judged under ``old``, a key an earlier version gave the same settings, keep their verdicts under
        ``new``: a re-scan carries them over instead of attacking them again."""
        with self._transaction() as db:
            if db.execute("SELECT 1 FROM runs WHERE target = ? AND verdict_key = ?", (target, old)).fetchone() is None:
                return
            log.info("the verdicts of %s are kept under this version's key for the same settings", target)
            db.execute("UPDATE runs SET verdict_key = ? WHERE target = ? AND verdict_key = ?", (new, target, old))
            db.execute("UPDATE records SET verdict_key = ? WHERE target = ? AND verdict_key = ?", (new, target, old))

    @reads("runs")
    def begin(self, target: str, key: str, content_version: str | None = None) -> Run:
        """Resume this target's unfinished run if it has the same verdict key; otherwise start a new run.

        An unfinished run with another key (other attacks, embedder or thresholds) is abandoned rather
        than mixed into: its records keep that key, so the new run attacks them again. ``content_version`` is
        the store's name for the content a new run is about to read (``Connector.content_version``).
        """
        with self._transaction() as db:
            open_run = db.execute(
                "SELECT id, verdict_key, cursor FROM runs WHERE target = ? AND finished_at IS NULL AND abandoned = 0",
                (target,),
            ).fetchone()
            if open_run is not None:
                run_id, old_key, cursor = open_run
                if old_key == key:
                    log.info("resuming run %d of %s after its last committed batch", run_id, target)
                    return Run(self, target, key, run_id, cursor, resumed=True)
                log.warning("the unfinished run %d used other settings: starting over with these", run_id)
                db.execute("UPDATE runs SET abandoned = 1 WHERE id = ?", (run_id,))
                db.execute("DELETE FROM carried WHERE run_id = ?", (run_id,))
            cur = db.execute(
                "INSERT INTO runs (target, verdict_key, started_at, content_version) VALUES (?, ?, ?, ?)",
                (target, key, datetime.now(UTC).isoformat(), content_version),
            )
            return Run(self, target, key, int(cur.lastrowid or 0), None, resumed=False)


@contextlib.contextmanager
def store_at(path: Path | None, store: ScanStore | None = None) -> Iterator[ScanStore]:
    """``store`` as it is, when the caller holds the state open (a scan opens it once); else the state at ``path``
    (a temporary one without a path) opened for the block."""
    if store is not None:
        yield store
        return
    with ScanStore(path) as opened:
        yield opened


class Run:
    """One run over one target: look records up, commit batches, finish, read the outcome."""

    def __init__(self, store: ScanStore, target: str, key: str, run_id: int, cursor: str | None, resumed: bool):
        self.store, self.db, self.path = store, store.db, store.path
        self.target, self.key, self.id = target, key, run_id
        self.cursor, self.resumed = cursor, resumed
        self.deep_records, self.deep_seconds, self.deep_exhausted, self.settled = self._so_far()
        self._current: CurrentDigests | None = None

    def _so_far(self) -> tuple[int, float, bool, bool]:
        row = self.db.execute(
            "SELECT deep_records, deep_seconds, deep_exhausted, settled FROM runs WHERE id = ?", (self.id,)
        ).fetchone()
        return int(row[0]), float(row[1]), bool(row[2]), bool(row[3])

    def _mine(self) -> tuple[str, tuple[Any, ...]]:
        """The condition (and its parameters) on ``records`` for this run's records, attacked or, once settled,
        carried over."""
        if self.settled:
            return "target = ?", (self.target,)
        return "target = ? AND run_id = ?", (self.target, self.id)

    def _index(self) -> CurrentDigests:
        if self._current is None:
            self._current = CurrentDigests(self.db, self.target, self.key, self.id)
        return self._current

    @reads("records")
    def lookup(self, record_ids: Sequence[str], digests: Sequence[bytes]) -> Seen:
        """What the state knows of these records, served with these digests. A record whose verdict was current
        when the run began and that comes unchanged is taken as current without asking the file, unless the run's
        index saw the id come changed before (then the run already took the id: ``Seen.held``)."""
        hits, taken = self._index().current(record_ids, digests)
        seen = Seen(taken, {r: d for r, d, hit in zip(record_ids, digests, hits, strict=True) if hit}, set())
        record_ids = [record_id for record_id, hit in zip(record_ids, hits, strict=True) if not hit]
        for start in range(0, len(record_ids), LOOKUP_CHUNK):
            chunk = list(record_ids[start : start + LOOKUP_CHUNK])
            marks = ",".join("?" * len(chunk))
            rows = self.db.execute(
                "SELECT record_id, digest, verdict_key IS ?, run_id = ?, deep_wanted AND NOT deep FROM records "
                f"WHERE target = ? AND record_id IN ({marks})",
                (self.key, self.id, self.target, *chunk),
            )
            for record_id, digest, same_key, committed, pending in rows:
                if committed:
                    seen.held[record_id] = digest
                elif same_key and record_id not in seen.held:
                    seen.judged[record_id] = digest
                    if pending:
                        seen.deep_pending.add(record_id)
        return seen

    @reads("records")
    def carry_unchanged(self) -> bool:
        """Carry every record over without reading the store, when nothing a re-scan reads could differ: the
        store names the content version the last finished run read, and every record's verdict is current under
        this run's key (no record left out by a sample, none waiting for the deep tier). What follows is the
        full re-scan's outcome, every record carried. False, and nothing changed, otherwise."""
        if self.resumed:
            return False
        with self.store._transaction() as db:
            version, last = db.execute(
                "SELECT (SELECT content_version FROM runs WHERE id = ?), (SELECT content_version FROM runs "
                "WHERE target = ? "
                "AND finished_at IS NOT NULL ORDER BY id DESC LIMIT 1)",
                (self.id, self.target),
            ).fetchone()
            if version is None or version != last:
                return False
            stale = db.execute(
                "SELECT 1 FROM records WHERE target = ? AND (verdict_key IS NOT ? OR (deep_wanted AND NOT deep)) "
                "LIMIT 1",
                (self.target, self.key),
            ).fetchone()
            if stale is not None:
                return False
            db.execute("UPDATE runs SET settled = 1 WHERE id = ?", (self.id,))
        self.settled = True
        log.info("%s: the content the last run read, every verdict carried over unread", self.target)
        return True

    def commit_batch(self, cursor: str | None, rows: Iterable[RecordRow], carried: Iterable[str]) -> None:
        """This batch's new verdicts, the records carried over and the cursor, in one transaction."""
        with self.store._transaction() as db:
            db.executemany("INSERT INTO carried VALUES (?, ?)", ((self.id, record_id) for record_id in carried))
            db.executemany(
                "INSERT OR REPLACE INTO records (target, record_id, digest, verdict_key, run_id, attacked_run, "
                "has_text, has_pii, deep, deep_wanted, finding, problem, text_finding) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        self.target,
                        row.record_id,
                        row.digest,
                        self.key if row.attacked else None,
                        self.id,
                        self.id if row.attacked else None,
                        row.has_text,
                        row.has_pii,
                        row.deep,
                        row.deep_wanted,
                        None if row.finding is None else row.finding.model_dump_json(),
                        None if row.problem is None else row.problem.model_dump_json(),
                        None if row.text_finding is None else row.text_finding.model_dump_json(),
                    )
                    for row in rows
                ],
            )
            db.execute(
                "UPDATE runs SET cursor = ?, deep_records = ?, deep_seconds = ?, deep_exhausted = ? WHERE id = ?",
                (cursor, self.deep_records, self.deep_seconds, self.deep_exhausted, self.id),
            )
        self.cursor = cursor

    def settle(self) -> None:
        """After the last page: drop the records this run did not see (deleted from the store, so their findings
        resolve), in one pass and one transaction with the mark that makes every remaining record this run's.
        A run resumed after that mark only clears what it carried since."""
        with self.store._transaction() as db:
            if not self.settled:
                dropped: list[Any] = []
                if self._current is None or not self._current.every_record_served():
                    dropped = db.execute(
                        "DELETE FROM records WHERE target = ? AND run_id != ? AND record_id NOT IN "
                        "(SELECT record_id FROM carried WHERE run_id = ?) "
                        "RETURNING finding, text_finding",  # SQLite 3.40 answers IS NOT NULL wrongly in RETURNING
                        (self.target, self.id, self.id),
                    ).fetchall()
                db.execute(
                    "UPDATE runs SET settled = 1, findings_resolved = ? WHERE id = ?",
                    (sum(finding is not None for row in dropped for finding in row), self.id),
                )
            if db.execute("SELECT 1 FROM carried WHERE run_id != ? LIMIT 1", (self.id,)).fetchone() is None:
                db.execute("DELETE FROM carried")  # emptied whole, without a search: far cheaper
            else:  # another target's unfinished run keeps its own
                db.execute("DELETE FROM carried WHERE run_id = ?", (self.id,))
        self.settled = True

    def finish(self, summary: Summary, attacked: int) -> None:
        """Close the run (settled). ``attacked``: how many records this run attacked, for the next run's estimate."""
        with self.store._transaction() as db:
            db.execute(
                "UPDATE runs SET finished_at = ?, records_attacked = ?, summary = ? WHERE id = ?",
                (datetime.now(UTC).isoformat(), attacked, summary.model_dump_json(), self.id),
            )

    def _rows(self, column: str) -> Iterator[str]:
        mine, params = self._mine()
        yield from (
            value
            for (value,) in self.db.execute(
                f"SELECT {column} FROM records WHERE {mine} AND {column} IS NOT NULL ORDER BY record_id", params
            )
        )

    @reads("records")
    def findings(self) -> list[Finding] | FindingSpool:
        """This run's findings in record-id order: a plain list when there are few, else a spool on disk."""
        mine, params = self._mine()
        both = self.db.execute(
            f"SELECT finding FROM (SELECT record_id, 0 AS kind, finding FROM records WHERE {mine} AND finding IS NOT "
            f"NULL UNION ALL SELECT record_id, 1, text_finding FROM records WHERE {mine} AND text_finding IS NOT NULL) "
            "ORDER BY record_id, kind",
            (*params, *params),
        )
        spool = _StateFindings(self.store.path, (finding for (finding,) in both))
        return list(spool) if len(spool) <= IN_MEMORY_FINDINGS else spool

    @reads("records")
    def problems(self) -> list[RecordProblem]:
        return [RecordProblem.model_validate_json(p) for p in self._rows("problem")]

    @reads("records")
    def count(self) -> int:
        """The records this run has committed so far, carried over or attacked."""
        carried = self.db.execute("SELECT COUNT(*) FROM carried WHERE run_id = ?", (self.id,)).fetchone()[0]
        return self.count_each("1")[0] + int(carried)

    @reads("records")
    def count_each(self, *conditions: str) -> list[int]:
        """How many of this run's records meet each condition, in one pass over them."""
        sums = ", ".join(f"COALESCE(SUM({condition}), 0)" for condition in conditions)
        mine, params = self._mine()
        row = self.db.execute(f"SELECT {sums} FROM records WHERE {mine}", params).fetchone()
        return [int(value) for value in row]

    @reads("records")
    def summary(self, findings: Iterable[Finding]) -> Summary:
        """This run's counts; ``findings`` are ``self.findings()``, read once by the caller."""
        severities: Counter[str] = Counter()
        types: Counter[str] = Counter()
        kinds: Counter[str] = Counter()
        for finding in findings:
            severities[finding.severity.value] += 1
            types.update(finding.pii_types)
            kinds[finding.kind] += 1
        scanned, skipped, with_text, with_pii, pii_flagged = self.count_each(
            "1",
            f"problem IS NOT NULL AND json_extract(problem, '$.field') IS NOT '{DUPLICATE_ID}'",
            "has_text",
            "has_pii",
            "has_pii AND finding IS NOT NULL",
        )
        return Summary(
            records_scanned=scanned,
            records_flagged=kinds[VECTOR],
            stored_text_flagged=kinds[STORED_TEXT],
            records_skipped=skipped,
            by_severity=dict(severities),
            by_pii_type=dict(types),
            records_with_source_text=with_text,
            source_pii_records=with_pii,
            source_pii_flagged=pii_flagged,
        )

    @reads("runs")
    def previous_rate(self) -> tuple[int, float | None]:
        """Records this target holds from earlier runs, and the last finished run's attack rate (records/s)."""
        known = self.db.execute("SELECT COUNT(*) FROM records WHERE target = ?", (self.target,)).fetchone()[0]
        row = self.db.execute(
            "SELECT started_at, finished_at, records_attacked FROM runs WHERE target = ? AND finished_at IS NOT NULL "
            "AND records_attacked > 0 ORDER BY id DESC LIMIT 1",
            (self.target,),
        ).fetchone()
        if row is None:
            return int(known), None
        seconds = (datetime.fromisoformat(row[1]) - datetime.fromisoformat(row[0])).total_seconds()
        return int(known), row[2] / seconds if seconds > 0 else None

    @reads("runs")
    def findings_resolved(self) -> int:
        row = self.db.execute("SELECT findings_resolved FROM runs WHERE id = ?", (self.id,)).fetchone()
        return int(row[0])

    @reads("runs")
    def history(self) -> list[RunSummary]:
        """Finished runs of this target, oldest first (the latest 50)."""
        rows = self.db.execute(
            "SELECT finished_at, records_attacked, summary FROM runs WHERE target = ? AND finished_at IS NOT NULL "
            "ORDER BY id DESC LIMIT 50",
            (self.target,),
        ).fetchall()
        history = []
        for finished_at, attacked, summary_json in reversed(rows):
            summary = Summary.model_validate_json(summary_json)
            history.append(
                RunSummary(
                    finished_at=datetime.fromisoformat(finished_at),
                    records_scanned=summary.records_scanned,
                    records_flagged=summary.records_flagged,
                    by_severity=summary.by_severity,
                    records_attacked=attacked,
                )
            )
        return history


def stored_reports(source: Path, out: Path) -> list[tuple[Report, Path]]:
    """What `vdbguard report SOURCE` re-renders, each report with its folder: a report.json's into ``out``, or
    every collection's last report in a scan state (``out/<connector>-<collection>`` when it holds several)."""
    from vdbguard.reports.loading import is_sqlite, load_report

    if not is_sqlite(source):
        return [(load_report(source), out)]
    with ScanStore(source) as state:
        reports = state.latest_reports()
    if not reports:
        raise VdbguardError(f"{source} holds no finished scan yet", "run the scan with --state to completion")
    if len(reports) == 1:
        return [(reports[0], out)]
    return [(report, out / f"{report.target.connector}-{report.target.collection}") for report in reports]
