"""PII detection shared with worker processes finds exactly what one process finds, and survives a dead worker."""

from __future__ import annotations

import pickle

import pytest

from tests.detectors.test_tagger import NEARLY_NAMED
from vdbguard.corpus import human_sentences, synthetic_pii
from vdbguard.detectors import load_detector
from vdbguard.detectors.base import Reading
from vdbguard.detectors.presidio import WINDOW, PresidioDetector
from vdbguard.detectors.shared import (
    CHUNK,
    MEMO,
    DetectorWorker,
    Memo,
    ProcessSharedDetector,
    worth_a_detector_worker,
)

pytestmark = pytest.mark.slow(minutes=4)
NONE = Reading([])


@pytest.fixture(autouse=True)
def no_memo() -> None:
    """These tests watch who detects: nothing may come from an earlier test's texts."""
    MEMO.clear()


@pytest.fixture(scope="module")
def texts() -> list[str]:
    found = [item.text for item in synthetic_pii(160, seed=5)] + human_sentences("holdout")[:120]
    return [*found, "", "born 12/03/1981 ssn 078-05-1120\nJane Roe, 555-0100", "Zoë Ñúñez é 😀 " * 3, "x" * WINDOW * 2]


def ready(shared: ProcessSharedDetector) -> ProcessSharedDetector:
    shared.detect_many(["start the workers"])
    for worker in shared._workers:
        assert worker.ready.wait(timeout=120), "the worker never reported ready"
    return shared


def test_workers_find_what_one_process_finds_in_order(texts: list[str]) -> None:
    shared = ready(ProcessSharedDetector(PresidioDetector(), processes=2, start_after=0))
    try:
        expected = shared.detector.read_many(texts)
        answered = shared._workers[0].read(texts[:CHUNK])  # what crosses the pipe decodes to the same
        assert answered == expected[:CHUNK]
        assert shared.read_many(texts) == expected
        assert shared.detect_many(texts[::-1]) == [reading.detections for reading in expected[::-1]]
        assert sum(bool(reading.detections) for reading in expected) > 100
    finally:
        shared.close()
    assert all(worker.process.poll() is not None for worker in shared._workers)  # closing ends them


def test_a_dead_worker_costs_no_result(texts: list[str]) -> None:
    shared = ready(ProcessSharedDetector(PresidioDetector(), processes=2, start_after=0))
    try:
        expected = shared.detector.detect_many(texts)
        shared._workers[0].process.kill()
        shared._workers[0].process.wait()
        assert shared.detect_many(texts) == expected
        assert not shared._workers[0].alive
        assert shared.detect_many(texts) == expected  # and from then on, in this process
    finally:
        shared.close()


def test_small_scans_start_no_worker_and_the_pickle_is_the_plain_detector(texts: list[str]) -> None:
    shared = load_detector(processes=2)
    assert isinstance(shared, ProcessSharedDetector)
    shared.detect_many(texts[: CHUNK * 2])
    assert shared._workers == []  # under start_after: a small scan never pays a worker's start
    assert type(pickle.loads(pickle.dumps(shared))) is PresidioDetector
    assert (shared.name, shared.version) == (PresidioDetector.name, PresidioDetector.version)


@pytest.fixture
def not_loaded_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a scan's process before anything loaded Presidio (the tests' own process has)."""
    monkeypatch.setattr(PresidioDetector, "loaded_here", classmethod(lambda cls: False))


@pytest.mark.usefixtures("not_loaded_here")
def test_an_early_worker_detects_alone_and_this_process_never_loads_the_detector(texts: list[str]) -> None:
    expected = PresidioDetector().detect_many(texts)
    early = DetectorWorker("presidio")
    shared = ProcessSharedDetector(PresidioDetector, processes=2, early=early)
    try:
        assert shared.detect_many(texts[:-1]) == expected[:-1]  # waits for the worker, however long it takes
        assert shared.detect(texts[-1]) == expected[-1]
        assert shared._detector is None
        shared.close()
        assert early.process.poll() is None, "the early worker is its caller's to stop"
    finally:
        early.stop()
    assert early.process.poll() is not None


@pytest.mark.usefixtures("not_loaded_here")
def test_an_early_worker_that_dies_before_it_is_ready_costs_no_result(texts: list[str]) -> None:
    early = DetectorWorker("presidio")
    early.process.kill()
    shared = ProcessSharedDetector(PresidioDetector, processes=2, early=early)
    assert shared.detect_many(texts) == PresidioDetector().detect_many(texts)
    assert shared._detector is not None and not early.alive


@pytest.mark.usefixtures("not_loaded_here")
def test_an_early_worker_that_dies_after_it_is_ready_costs_no_result(texts: list[str]) -> None:
    early = DetectorWorker("presidio")
    assert early.await_ready()
    early.process.kill()
    early.process.wait()
    shared = ProcessSharedDetector(PresidioDetector, processes=2, early=early)
    assert shared.detect_many(texts) == PresidioDetector().detect_many(texts)  # every chunk detected here instead
    assert shared._detector is not None and not early.alive


def test_a_worker_still_building_its_detector_joins_a_batch_this_process_began(texts: list[str]) -> None:
    """A scan's first pages come before its worker is ready: the worker takes chunks as soon as it is, not from
    the next batch on (this process's first chunk here lasts until it is ready)."""
    expected = PresidioDetector().detect_many(texts)
    answered: list[int] = []

    class Patient(PresidioDetector):
        def read_many(self, batch):
            assert early.ready.wait(timeout=120), "the worker never built its detector"
            return super().read_many(batch)

    patient = Patient()
    early = DetectorWorker("presidio")
    shared = ProcessSharedDetector(patient, processes=2, early=early)
    read = early.read
    early.read = lambda chunk: answered.append(len(chunk)) or read(chunk)  # type: ignore[method-assign]
    try:
        assert shared.detect_many(texts) == expected
        assert answered, "the worker took no chunk of the batch under way when it became ready"
    finally:
        early.stop()


def test_a_big_scan_or_a_loaded_detector_detects_here_as_well_as_in_the_early_worker(texts: list[str]) -> None:
    expected = PresidioDetector().detect_many(texts)
    assert PresidioDetector.loaded_here() and not worth_a_detector_worker("presidio")
    early = DetectorWorker("presidio")
    try:
        loaded = ProcessSharedDetector(PresidioDetector, processes=2, start_after=10**9, early=early)
        assert loaded.detect_many(texts) == expected and loaded._detector is not None  # no wait for the worker
        MEMO.clear()  # else the texts are looked up
        big = ProcessSharedDetector(PresidioDetector, processes=2, start_after=CHUNK, early=early)
        assert big.detect_many(texts) == expected and big._detector is not None
        assert big._workers == [early], "the early worker counts among the processes"
    finally:
        early.stop()


def test_a_big_job_announced_starts_its_workers_before_the_first_text(texts: list[str]) -> None:
    """A calibration sample or a copy to redact says how many texts are coming: the workers load while the first
    page is read, and the answers are what one process finds."""
    shared = ProcessSharedDetector(PresidioDetector, processes=2, start_after=1000)
    try:
        shared.expect(999)
        assert not shared._workers, "a small job pays no worker's start"
        shared.expect(1000)
        (worker,) = shared._workers
        assert worker.ready.wait(timeout=120) and shared.detect_many(texts) == PresidioDetector().detect_many(texts)
    finally:
        shared.close()


def test_a_worker_of_a_detector_that_runs_a_model_may_import_torch_and_finds_what_this_process_finds() -> None:
    """Workers block torch's import for Presidio's sake, but not for the learned tagger, which runs on it."""
    texts = ["Thanks to Ingrid Solberg for the patch.", "Shipped from Houston on Tuesday.", "SSN: 078-05-1120"]
    worker = DetectorWorker("presidio")
    try:
        assert worker.await_ready(), "the worker never built the tagger"
        read = [NEARLY_NAMED[0], *texts]
        answered = worker.read(read)
        assert answered == load_detector("presidio").read_many(read)
        assert [reading.unsure for reading in answered] == [True, False, False, False]
    finally:
        worker.stop()


def test_a_text_detected_before_is_looked_up_not_detected_again(texts: list[str]) -> None:
    """protect's copy reads the texts its scan before it read: the second pass costs no detection."""
    asked: list[str] = []

    class Counted(PresidioDetector):
        def read_many(self, batch):
            asked.extend(batch)
            return super().read_many(batch)

    first, second = ProcessSharedDetector(Counted(), processes=1), ProcessSharedDetector(Counted(), processes=1)
    expected = first.detect_many(texts[:40])
    assert len(asked) == 40
    found = second.detect_many([*texts[:40], *texts[:40], texts[40]])
    assert found == [*expected, *expected, Counted().detect_many([texts[40]])[0]]
    assert asked == [*texts[:40], texts[40], texts[40]]  # the last: this test's own check
    found[0].clear()  # a caller's list is its own
    assert second.detect_many(texts[:1]) == expected[:1]
    stricter = ProcessSharedDetector(Counted(min_score=0.9), processes=1)
    asked.clear()
    stricter.detect_many(texts[:40])  # another cut-off finds other spans: nothing looked up
    assert asked == texts[:40]


def test_a_memo_keeps_readings_apart_per_detector_and_drops_the_oldest() -> None:
    memo = Memo(limit=10)
    memo.put("a", {"12345": NONE, "abcde": NONE})
    assert set(memo.get("a", ["12345", "abcde"])) == {"12345", "abcde"}
    assert memo.get("b", ["12345"]) == {}
    memo.put("b", {"xyz": NONE})
    assert set(memo.get("a", ["12345", "abcde"])) == {"abcde"} and set(memo.get("b", ["xyz"])) == {"xyz"}
    memo.put("a", {"x" * 11: NONE})  # longer than the memo holds: never kept
    assert memo.get("a", ["x" * 11]) == {}
