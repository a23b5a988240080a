"""A re-scan of a store that names the same content version as the last run carries every verdict over without
reading a page, and reports exactly what reading every page would have; anything a re-scan could judge anew reads
again."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from vdbguard.connectors.base import CollectionInfo
from vdbguard.connectors.chroma import ChromaConnector
from vdbguard.connectors.lancedb import LanceDBConnector

from vdbguard.detectors import shared
from vdbguard.detectors.presidio import PresidioDetector
from vdbguard.detectors.shared import DetectorWorker, WorkerSlot
from vdbguard.records import Batch, VectorRecord
from vdbguard.reports.schema import Report
from vdbguard.scan import Scanner, ScanSettings, ScanStore, ScanTarget, scan_collection


class CountingLanceDB(LanceDBConnector):
    """A real LanceDB connector that counts the pages it hands out."""

    pages = 0

    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
        for batch in super().iter_batches(batch_size, resume_from):
            self.pages += 1
            yield batch


class Unnamed(CountingLanceDB):
    """The same store, read as one that names no content version: every re-scan reads every page."""

    def content_version(self) -> str | None:
        return None


@pytest.fixture
def store(lance_store: Path, tmp_path: Path) -> Path:
    shutil.copytree(lance_store, tmp_path / "store")
    return tmp_path / "store"


@pytest.fixture(scope="module")
def scanner(small_attacks) -> Scanner:
    return Scanner(small_attacks, PresidioDetector(), dimension=384)


def test_an_unchanged_content_version_is_carried_over_unread_with_the_full_rescans_report(
    store: Path, scanner: Scanner, tmp_path: Path
) -> None:
    named, unnamed = CountingLanceDB(collection="notes", path=store), Unnamed(collection="notes", path=store)
    quick, full = tmp_path / "quick.sqlite", tmp_path / "full.sqlite"
    first = scanner.scan(named, batch_size=32, state_path=quick)
    scanner.scan(unnamed, batch_size=32, state_path=full)
    named.pages = unnamed.pages = 0
    carried = scanner.scan(named, batch_size=32, state_path=quick)
    read = scanner.scan(unnamed, batch_size=32, state_path=full)
    assert named.pages == 0 and unnamed.pages > 0
    assert first.findings and {p.record_id for p in first.problems} == {"bad-nan", "bad-zero"}
    assert carried.coverage.records_attacked == 0 and carried.coverage.records_carried_over == first.records_scanned
    assert (carried.findings, carried.problems, carried.summary) == (read.findings, read.problems, read.summary)
    assert carried.coverage == read.coverage
    assert [r.records_scanned for r in carried.history] == [r.records_scanned for r in read.history]

    with LanceDBConnector(collection="notes", path=store) as writer:
        record = next(r for batch in writer.iter_batches() for r in batch.records if not r.id.startswith("bad"))
        writer.upsert([VectorRecord(id=record.id, vector=-record.vector, text=record.text, payload=record.payload)])
    after = scanner.scan(named, batch_size=32, state_path=quick)
    assert named.pages > 0 and after.coverage.records_attacked == 1


def test_a_content_version_carries_nothing_the_last_run_left_unjudged_or_judged_otherwise(
    store: Path, scanner: Scanner, small_attacks, tmp_path: Path
) -> None:
    connector, state = CountingLanceDB(collection="notes", path=store), tmp_path / "state.sqlite"
    half = scanner.scan(connector, batch_size=32, state_path=state, sample=0.5)
    connector.pages = 0
    whole = scanner.scan(connector, batch_size=32, state_path=state)
    assert connector.pages > 0, "records the sample left out are attacked now"
    assert whole.coverage.records_attacked == half.records_scanned - half.coverage.records_attacked

    other = Scanner(small_attacks[:1], PresidioDetector(), dimension=384)
    connector.pages = 0
    again = other.scan(connector, batch_size=32, state_path=state)
    assert connector.pages > 0 and again.coverage.records_attacked == again.records_scanned


def test_a_state_file_from_before_content_versions_gains_the_columns(tmp_path: Path) -> None:
    with ScanStore(tmp_path / "state.sqlite") as store:
        store.db.execute("ALTER TABLE runs DROP COLUMN content_version")
        store.db.execute("ALTER TABLE runs DROP COLUMN settled")
    with ScanStore(tmp_path / "state.sqlite") as store:
        run = store.begin("t", "key", "v1")
        assert run.carry_unchanged() is False, "no finished run read that content"
    with sqlite3.connect(tmp_path / "state.sqlite") as db:
        assert db.execute("SELECT content_version, settled FROM runs").fetchall() == [("v1", 0)]


class WatchedChroma(ChromaConnector):
    """A real embedded Chroma connector that counts what would copy the store: describing it, reading a page."""

    described = pages = 0

    def describe(self) -> CollectionInfo:
        self.described += 1
        return super().describe()

    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
        for batch in super().iter_batches(batch_size, resume_from):
            self.pages += 1
            yield batch


def test_an_unchanged_chroma_store_is_neither_described_nor_read_again(
    pii_store, embedder, small_attacks, tmp_path: Path
) -> None:
    path, collection, _ = pii_store
    shutil.copytree(path, tmp_path / "store")
    state = tmp_path / "state.sqlite"

    def scan(connector: WatchedChroma) -> Report:
        return scan_collection(
            connector, ScanTarget("chroma", str(tmp_path / "store")),
            ScanSettings(profile="small", batch_size=32, state_path=state), embedder=embedder,
        )  # fmt: skip

    first = scan(WatchedChroma(collection=collection, path=tmp_path / "store"))
    again = WatchedChroma(collection=collection, path=tmp_path / "store")
    report = scan(again)
    assert (again.described, again.pages) == (0, 0)
    assert report.target == first.target and report.findings == first.findings
    assert report.coverage is not None and report.coverage.records_carried_over == first.summary.records_scanned


def test_a_scan_that_reads_loads_its_detector_in_a_worker_meanwhile_and_an_unchanged_one_starts_none(
    pii_store, embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, collection, _ = pii_store
    shutil.copytree(path, tmp_path / "store")
    started: list[DetectorWorker] = []

    class Recorded(DetectorWorker):
        def __init__(self, plugin: str, settings=None) -> None:
            super().__init__(plugin, settings)
            started.append(self)

    monkeypatch.setattr(shared, "DetectorWorker", Recorded)
    monkeypatch.setattr(shared, "detector_cores", lambda: 2)  # as on any machine with two cores or more
    monkeypatch.setattr(PresidioDetector, "loaded_here", classmethod(lambda cls: False))  # as in a fresh process
    shared.MEMO.clear()  # and with no text detected before: the scan must detect, not look up

    def scan(state: str, slot: WorkerSlot | None = None) -> Report:
        return scan_collection(
            ChromaConnector(collection=collection, path=tmp_path / "store"),
            ScanTarget("chroma", str(tmp_path / "store")),
            ScanSettings(profile="small", batch_size=32, state_path=tmp_path / state),
            embedder=embedder, detector_workers=slot,
        )  # fmt: skip

    first = scan("state.sqlite")
    assert len(started) == 1 and started[0].ready.is_set()  # it built the detector the scan detected with
    assert started[0].process.poll() is not None  # and is gone once the scan is done
    assert first.summary.records_flagged > 0
    assert scan("state.sqlite").findings == first.findings
    assert len(started) == 1, "an unchanged re-scan starts none"

    job = WorkerSlot()  # a job's scans share one
    try:
        assert scan("a.sqlite", job).findings == scan("b.sqlite", job).findings == first.findings
        assert len(started) == 2 and started[1].process.poll() is None
    finally:
        job.close()
    assert started[1].process.poll() is not None
