"""The engine on a real embedded Chroma store: findings, bad records, masking, crash and resume."""

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from vdbguard.connectors.chroma import ChromaConnector

from tests.helpers import ListConnector
from vdbguard.detectors.presidio import PresidioDetector
from vdbguard.pii import PiiType
from vdbguard.records import Batch, VectorRecord
from vdbguard.reports.schema import Severity
from vdbguard.scan import Scanner, ScanState, severity_of, summarise


@pytest.fixture(scope="module")
def detector() -> PresidioDetector:
    return PresidioDetector()


class CrashingConnector(ChromaConnector):
    """A real Chroma connector whose process 'dies' after a given number of batches."""

    def __init__(self, *, crash_after: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.crash_after = crash_after

    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
        for served, batch in enumerate(super().iter_batches(batch_size, resume_from)):
            if served == self.crash_after:
                raise KeyboardInterrupt
            yield batch


def test_scan_flags_pii_records_and_masks_evidence(pii_store, small_attacks, detector) -> None:
    path, collection, truth = pii_store
    scanner = Scanner(small_attacks, detector, dimension=384)
    with ChromaConnector(collection=collection, path=path) as connector:
        state = scanner.scan(connector, batch_size=32)
    flagged = {f.record_id for f in state.findings}
    pii_ids = {rid for rid, pii in truth.items() if pii}
    assert state.records_scanned == len(truth)
    assert len(flagged & pii_ids) >= 0.7 * len(pii_ids)
    assert len(flagged - pii_ids) <= 0.2 * (len(truth) - len(pii_ids))
    for finding in state.findings:
        assert finding.evidence and all(e.score >= e.threshold for e in finding.evidence)
        assert finding.confirmed_by_source is not None, "demo records store their text"
        for word in finding.recovered_words:
            assert "*" in word or len(word) == 1
    summary = summarise(state)
    assert summary.records_with_source_text == len(truth)
    assert summary.source_pii_flagged <= summary.source_pii_records


def test_interrupted_scan_resumes_without_skipping_or_double_counting(
    pii_store, small_attacks, detector, tmp_path: Path
) -> None:
    path, collection, truth = pii_store
    scanner = Scanner(small_attacks, detector, dimension=384)
    with ChromaConnector(collection=collection, path=path) as connector:
        reference = scanner.scan(connector, batch_size=16)

    state_file = tmp_path / "scan.state.json"
    with (
        pytest.raises(KeyboardInterrupt),
        CrashingConnector(collection=collection, path=path, crash_after=3) as c,
    ):
        scanner.scan(c, batch_size=16, state_path=state_file, target="t")
    partial = ScanState.load(state_file, "t")
    assert partial.records_scanned == 48 and not partial.done

    with ChromaConnector(collection=collection, path=path) as connector:
        resumed = scanner.scan(connector, batch_size=16, state_path=state_file, target="t")
    assert resumed.done and resumed.records_scanned == len(truth)
    ids = [f.record_id for f in resumed.findings]
    assert len(ids) == len(set(ids))
    assert ids == [f.record_id for f in reference.findings]


def test_state_file_of_another_scan_is_refused(tmp_path: Path) -> None:
    from vdbguard.errors import VdbguardError

    ScanState(target="chroma:/a:one").save(tmp_path / "s.json")
    with pytest.raises(VdbguardError, match="another scan"):
        ScanState.load(tmp_path / "s.json", "chroma:/b:two")


def test_bad_records_are_reported_by_id_and_field_and_the_rest_is_scanned(small_attacks, detector, embedder) -> None:
    good = embedder.encode(["Send the invoice for Dr. Laura Mitchell to laura.mitchell@example.com."])[0]
    nan = good.copy()
    nan[3] = np.nan
    records = [
        VectorRecord(id="ok", vector=good, text="x"),
        VectorRecord(id="no-vector", vector=None),
        VectorRecord(id="has-nan", vector=nan),
        VectorRecord(id="short", vector=good[:100]),
    ]
    state = Scanner(small_attacks, detector, dimension=384).scan(ListConnector(records))
    problems = {(p.record_id, p.field) for p in state.problems}
    assert problems == {("no-vector", "vector"), ("has-nan", "vector"), ("short", "vector")}
    assert any("NaN" in p.problem for p in state.problems)
    assert any("dimension 100" in p.problem for p in state.problems)
    assert state.records_scanned == 4
    assert [f.record_id for f in state.findings] == ["ok"]


def test_severity_rules() -> None:
    assert severity_of({PiiType.EMAIL}, recovered_verbatim=False) is Severity.MEDIUM
    assert severity_of({PiiType.PERSON, PiiType.EMAIL}, recovered_verbatim=False) is Severity.HIGH
    assert severity_of({PiiType.SSN}, recovered_verbatim=False) is Severity.HIGH
    assert severity_of({PiiType.PERSON, PiiType.MEDICAL}, recovered_verbatim=True) is Severity.CRITICAL
