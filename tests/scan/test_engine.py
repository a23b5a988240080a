"""The engine on a real embedded Chroma store: findings, bad records, masking, crash and resume."""

import gc
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import chromadb
import numpy as np
import pytest
from vdbguard.connectors.chroma import ChromaConnector

from tests.helpers import ListConnector
from vdbguard.attacks import Attack, Inference
from vdbguard.detectors.presidio import PresidioDetector
from vdbguard.pii import PiiType
from vdbguard.records import Batch, VectorRecord, record_digest
from vdbguard.reports.schema import Finding, Severity
from vdbguard.scan import DeepTier, Scanner, ScanStore, severity_of
from vdbguard.scan.engine import DEEP_CHUNK, InProcess, ScanResult, duplicate_id
from vdbguard.scan.state import DUPLICATE_ID


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


def test_scan_flags_pii_records_and_masks_only_the_pii_in_recovered_words(pii_store, small_attacks, detector) -> None:
    path, collection, truth = pii_store
    scanner = Scanner(small_attacks, detector, dimension=384)
    with ChromaConnector(collection=collection, path=path) as connector:
        result = scanner.scan(connector, batch_size=32)
    flagged = {f.record_id for f in result.findings}
    pii_ids = {rid for rid, pii in truth.items() if pii}
    assert result.records_scanned == len(truth)
    assert len(flagged & pii_ids) >= 0.7 * len(pii_ids)
    assert len(flagged - pii_ids) <= 0.2 * (len(truth) - len(pii_ids))
    masked_words = readable_words = 0
    for finding in result.findings:
        assert finding.evidence and all(e.score >= e.threshold for e in finding.evidence)
        assert finding.confirmed_by_source is not None, "demo records store their text"
        for evidence in finding.evidence:
            assert evidence.recovered is None or "*" in evidence.recovered or len(evidence.recovered) < 2
        masked = {w for w in finding.recovered_words if "*" in w}
        masked_words += len(masked)
        readable_words += len(finding.recovered_words) - len(masked)
        values = " ".join(e.recovered or "" for e in finding.evidence).lower()
        for word in set(finding.recovered_words) - masked:
            assert word.lower() not in values.split(), f"{word!r} is part of a recovered PII value"
    # the small profile's bag-of-words seldom recovers a PII word at all (1 of 390 words here): none need be masked
    assert readable_words > masked_words, "topic words readable"
    assert result.summary.records_with_source_text == len(truth)
    assert result.summary.source_pii_flagged <= result.summary.source_pii_records
    assert result.coverage.records_attacked == len(truth) and result.coverage.records_carried_over == 0


def _count(state_file: Path, where: str = "1") -> int:
    with sqlite3.connect(state_file) as db:
        return db.execute(f"SELECT COUNT(*) FROM records WHERE {where}").fetchone()[0]


def test_interrupted_scan_resumes_without_skipping_or_double_counting(
    pii_store, small_attacks, detector, tmp_path: Path
) -> None:
    path, collection, truth = pii_store
    scanner = Scanner(small_attacks, detector, dimension=384)
    with ChromaConnector(collection=collection, path=path) as connector:
        reference = scanner.scan(connector, batch_size=16)

    state_file = tmp_path / "scan.sqlite"
    with (
        pytest.raises(KeyboardInterrupt),
        CrashingConnector(collection=collection, path=path, crash_after=3) as c,
    ):
        scanner.scan(c, batch_size=16, state_path=state_file, target="t")
    assert _count(state_file) == 48, "three committed batches"

    with ChromaConnector(collection=collection, path=path) as connector:
        resumed = scanner.scan(connector, batch_size=16, state_path=state_file, target="t")
    assert resumed.records_scanned == len(truth)
    assert resumed.coverage.records_attacked == len(truth), "the first run's batches count once, in the same run"
    ids = [f.record_id for f in resumed.findings]
    assert len(ids) == len(set(ids))
    assert ids == sorted(f.record_id for f in reference.findings)


@pytest.fixture
def own_store(pii_store, tmp_path: Path) -> tuple[Path, str]:
    """A copy of the session store that a test may change."""
    path, collection, _ = pii_store
    shutil.copytree(path, tmp_path / "store")
    return tmp_path / "store", collection


def test_rescan_attacks_only_new_and_changed_records_and_resolves_deleted_ones(
    own_store, small_attacks, detector, embedder, tmp_path: Path
) -> None:
    path, collection = own_store
    state_file = tmp_path / "state.sqlite"
    scanner = Scanner(small_attacks, detector, dimension=384)
    with ChromaConnector(collection=collection, path=path) as connector:
        first = scanner.scan(connector, batch_size=32, state_path=state_file, target="t")
        again = scanner.scan(connector, batch_size=32, state_path=state_file, target="t")
    assert again.coverage.records_attacked == 0 and again.coverage.records_carried_over == first.records_scanned
    assert again.findings == first.findings and again.summary == first.summary
    assert [run.records_flagged for run in again.history] == [first.summary.records_flagged] * 2

    flagged = first.findings[0].record_id
    clean = next(rid for rid in _ids(path, collection) if rid not in {f.record_id for f in first.findings})
    new_text = "Please forward the lab results of Dr. Hannah Okafor to hannah.okafor@example.com today."
    with ChromaConnector(collection=collection, path=path) as writer:
        writer.upsert([VectorRecord(id=clean, vector=embedder.encode([new_text])[0], text=new_text)])
        writer.upsert([VectorRecord(id="brand-new", vector=embedder.encode([new_text])[0], text=new_text)])
    chromadb.PersistentClient(path=str(path)).get_collection(collection).delete(ids=[flagged])
    with ChromaConnector(collection=collection, path=path) as connector:
        third = scanner.scan(connector, batch_size=32, state_path=state_file, target="t")
    assert third.coverage.records_attacked == 2, "one changed record, one new"
    assert third.coverage.findings_resolved == 1
    assert third.records_scanned == first.records_scanned
    now_flagged = {f.record_id for f in third.findings}
    assert flagged not in now_flagged and {clean, "brand-new"} <= now_flagged


def _ids(path: Path, collection: str) -> list[str]:
    with ChromaConnector(collection=collection, path=path) as connector:
        return [r.id for batch in connector.iter_batches(64) for r in batch.records]


def test_other_attack_settings_never_reuse_or_mix_verdicts(pii_store, small_attacks, detector, tmp_path) -> None:
    path, collection, truth = pii_store
    state_file = tmp_path / "state.sqlite"
    both = Scanner(small_attacks, detector, dimension=384)
    probe_only = Scanner(small_attacks[:1], detector, dimension=384)
    with pytest.raises(KeyboardInterrupt), CrashingConnector(collection=collection, path=path, crash_after=2) as c:
        both.scan(c, batch_size=16, state_path=state_file, target="t")
    with ChromaConnector(collection=collection, path=path) as connector:
        other = probe_only.scan(connector, batch_size=16, state_path=state_file, target="t")
        back = both.scan(connector, batch_size=16, state_path=state_file, target="t")
    assert other.coverage.records_attacked == len(truth), "the unfinished run had other attacks: start over"
    assert back.coverage.records_attacked == len(truth), "verdicts of other attacks are never carried over"
    assert all(e.attack == small_attacks[0].name or e.attack == "fused" for f in other.findings for e in f.evidence)


def test_state_file_that_is_not_a_state_is_refused(tmp_path: Path) -> None:
    from vdbguard.errors import VdbguardError

    (tmp_path / "s.json").write_text('{"version": 1, "findings": []}')
    with pytest.raises(VdbguardError, match="not a vdbguard state"):
        ScanStore(tmp_path / "s.json")


def test_sample_attacks_a_share_and_later_runs_cover_the_rest(pii_store, small_attacks, detector, tmp_path) -> None:
    path, collection, truth = pii_store
    state_file = tmp_path / "state.sqlite"
    scanner = Scanner(small_attacks, detector, dimension=384)
    with ChromaConnector(collection=collection, path=path) as connector:
        first = scanner.scan(connector, batch_size=32, state_path=state_file, target="t", sample=0.5)
        second = scanner.scan(connector, batch_size=32, state_path=state_file, target="t", sample=0.5)
    assert 0.3 * len(truth) < first.coverage.records_attacked < 0.7 * len(truth)
    assert first.coverage.fast_tier_sample == 0.5 and first.records_scanned == len(truth)
    assert second.coverage.records_carried_over == first.coverage.records_attacked
    covered = second.coverage.records_carried_over + second.coverage.records_attacked
    assert covered > first.coverage.records_attacked, "the second run samples records the first left out"


def test_deep_tier_runs_on_flagged_records_within_its_budget(pii_store, small_attacks, detector, tmp_path) -> None:
    path, collection, _ = pii_store
    scanner = Scanner(small_attacks[:1], detector, dimension=384)
    deep = DeepTier(Scanner(small_attacks[1:], detector, dimension=384), sample=0.0, max_records=5)
    state_file = tmp_path / "state.sqlite"
    with ChromaConnector(collection=collection, path=path) as connector:
        first = scanner.scan(connector, batch_size=32, state_path=state_file, target="t", deep=deep)
        second = scanner.scan(connector, batch_size=32, state_path=state_file, target="t", deep=deep)
    c = first.coverage
    assert c.deep_records == 5 and c.deep_budget_exhausted and c.deep_flagged_by_fast > 5
    assert c.deep_flagged_covered == 5 and c.deep_attacks == [small_attacks[1].name]
    deep_evidence = [f for f in first.findings if any(e.attack == small_attacks[1].name for e in f.evidence)]
    assert len(deep_evidence) <= 5, "deep evidence only where the deep tier ran"
    assert second.coverage.deep_flagged_covered == 10, "the next run goes on with records the budget left out"


def test_deep_tier_hands_its_records_over_in_chunks(pii_store, small_attacks, detector, monkeypatch) -> None:
    path, collection, _ = pii_store
    deep_attack = small_attacks[1]
    sizes: list[int] = []
    real_infer = deep_attack.infer

    def counted(vectors, known_texts=None):
        sizes.append(len(vectors))
        return real_infer(vectors, known_texts)

    monkeypatch.setattr(deep_attack, "infer", counted)
    deep = DeepTier(Scanner([deep_attack], detector, dimension=384), sample=1.0, max_records=40)
    with ChromaConnector(collection=collection, path=path) as connector:
        result = Scanner(small_attacks[:1], detector, dimension=384).scan(connector, batch_size=32, deep=deep)
    assert result.coverage.deep_records == sum(sizes) == 40
    assert max(sizes) == DEEP_CHUNK and min(sizes) >= 1, sizes  # batched, and the record budget still holds


def test_allow_list_and_severity_policy(pii_store, small_attacks, detector, tmp_path) -> None:
    from vdbguard.config import AllowList
    from vdbguard.scan.settings import ConfigPolicy

    path, collection, _ = pii_store
    with ChromaConnector(collection=collection, path=path) as connector:
        plain = Scanner(small_attacks, detector, dimension=384).scan(connector, batch_size=64)
        first_id = plain.findings[0].record_id
        policy = ConfigPolicy(
            AllowList(records=[first_id], patterns=[".*"]),
            {PiiType.EMAIL: Severity.CRITICAL, PiiType.PERSON: Severity.CRITICAL},
        )
        allowed = Scanner(small_attacks, detector, dimension=384, policy=policy).scan(connector, batch_size=64)
    assert first_id not in {f.record_id for f in allowed.findings}
    assert all(e.recovered is None for f in allowed.findings for e in f.evidence), "every value is allowed"
    assert all(f.severity is Severity.CRITICAL for f in allowed.findings if {"EMAIL", "PERSON"} & set(f.pii_types))


def test_bad_records_are_reported_by_id_and_field_and_the_rest_is_scanned(
    small_attacks, detector, embedder, recwarn: pytest.WarningsRecorder
) -> None:
    good = embedder.encode(["Send the invoice for Dr. Laura Mitchell to laura.mitchell@example.com."])[0]
    nan = good.copy()
    nan[3] = np.nan
    records = [
        VectorRecord(id="ok", vector=good, text="x"),
        VectorRecord(id="no-vector", vector=None),
        VectorRecord(id="has-nan", vector=nan),
        VectorRecord(id="short", vector=good[:100]),
        VectorRecord(id="huge", vector=np.full(384, 3e38, dtype=np.float32)),  # finite, but its norm is not
    ]
    result = Scanner(small_attacks, detector, dimension=384).scan(ListConnector(records))
    problems = {(p.record_id, p.field) for p in result.problems}
    assert problems == {("no-vector", "vector"), ("has-nan", "vector"), ("short", "vector"), ("huge", "vector")}
    assert any("NaN" in p.problem for p in result.problems)
    assert any(p.record_id == "huge" and "norm too large" in p.problem for p in result.problems)
    assert not [w for w in recwarn if "overflow" in str(w.message)], "named, not attacked with a numpy warning"
    assert any("dimension 100" in p.problem for p in result.problems)
    assert result.records_scanned == 5
    assert [f.record_id for f in result.findings] == ["ok"]


def test_severity_rules() -> None:
    assert severity_of({PiiType.EMAIL}, recovered_verbatim=False) is Severity.MEDIUM
    assert severity_of({PiiType.PERSON, PiiType.EMAIL}, recovered_verbatim=False) is Severity.HIGH
    assert severity_of({PiiType.SSN}, recovered_verbatim=False) is Severity.HIGH
    assert severity_of({PiiType.PERSON, PiiType.MEDICAL}, recovered_verbatim=True) is Severity.CRITICAL


def test_a_vector_made_from_its_redacted_text_is_not_a_high_finding(small_attacks, detector, embedder) -> None:
    """A store that redacted before embedding: a probe that fires on "<PERSON>"'s context is capped at low,
    because the vector holds no more than its text; the same text over a vector of the unredacted original
    keeps its severity."""
    from vdbguard.corpus import synthetic_pii
    from vdbguard.transforms.redaction import redact_many

    originals = [item.text for item in synthetic_pii(80, seed=31) if item.pii]
    redacted = redact_many(originals)
    changed = [(o, r) for o, r in zip(originals, redacted, strict=True) if o != r][:24]
    originals, redacted = [o for o, _ in changed], [r for _, r in changed]
    consistent = embedder.encode(redacted)
    leaking = embedder.encode(originals)
    records = [VectorRecord(f"c{i}", v, text=t) for i, (v, t) in enumerate(zip(consistent, redacted, strict=True))]
    records += [VectorRecord(f"l{i}", v, text=t) for i, (v, t) in enumerate(zip(leaking, redacted, strict=True))]
    scanner = Scanner(small_attacks, detector, dimension=384, source_embedder=embedder)
    findings = {f.record_id: f for f in scanner.scan(ListConnector(records)).findings}
    on_redacted = [f for rid, f in findings.items() if rid.startswith("c")]
    on_leaking = [f for rid, f in findings.items() if rid.startswith("l")]
    assert on_redacted, "the probes fire on some redacted texts' vectors (else this proves nothing)"
    for finding in on_redacted:
        assert finding.vector_matches_source is True
        if not any(finding.confirmed_by_source.values()):
            assert finding.severity == Severity.LOW
    assert all(f.vector_matches_source is not True for f in on_leaking)
    assert any(f.vector_matches_source is False for f in on_leaking), "checked where the text does not confirm"
    assert sum(f.severity.rank > Severity.LOW.rank for f in on_leaking) > len(on_leaking) / 2
    plain = Scanner(small_attacks, detector, dimension=384).scan(ListConnector(records[:1])).findings
    assert all(f.vector_matches_source is None for f in plain), "not checked without the store's model"


def test_a_state_in_use_by_another_process_is_refused_and_free_again_after(tmp_path: Path) -> None:
    import subprocess
    import sys

    from vdbguard.errors import VdbguardError

    state = tmp_path / "scan.sqlite"
    hold = "import pathlib, vdbguard.scan as v; s = v.ScanStore(pathlib.Path(%r)); print('held', flush=True); input()"
    holder = subprocess.Popen(
        [sys.executable, "-c", hold % str(state)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(VdbguardError, match="another vdbguard process is using the state file"):
            ScanStore(state)
    finally:
        holder.communicate("\n", timeout=30)
    with ScanStore(state) as store:  # released when the other process ends
        assert store.path == state
    assert (tmp_path / "scan.sqlite.lock").stat().st_mode & 0o777 == 0o600


def test_past_the_in_memory_limit_findings_are_spooled_and_read_back_whole(
    pii_store, small_attacks, detector, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scan with more findings than a report holds in memory returns them on disk, the same ones in the same
    order; a re-scan carrying them over spools them too."""
    from vdbguard.reports.spool import FindingSpool
    from vdbguard.scan import state

    path, collection, _ = pii_store
    scanner = Scanner(small_attacks, detector, dimension=384)
    with ChromaConnector(collection=collection, path=path) as connector:
        held = scanner.scan(connector, batch_size=32)
        monkeypatch.setattr(state, "IN_MEMORY_FINDINGS", 0)
        spooled = scanner.scan(connector, batch_size=32, state_path=tmp_path / "s.sqlite", target="t")
        again = scanner.scan(connector, batch_size=32, state_path=tmp_path / "s.sqlite", target="t")
    assert isinstance(held.findings, list) and held.findings
    for result in (spooled, again):
        assert isinstance(result.findings, FindingSpool)
        assert list(result.findings) == held.findings and result.summary.records_flagged == len(held.findings)


class Pages(ListConnector):
    """Hand-made records served ``batch_size`` at a time, as a store pages them."""

    def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
        for start in range(0, len(self.records), batch_size):
            yield Batch(self.records[start : start + batch_size], cursor=None)


class Deferred(InProcess):
    """Ray's order of events in this process: a page is attacked only when the loop asks for its rows, after it has
    handed over three more."""

    pages_ahead = 3

    def submit(self, scanner, records, digests):
        return lambda: scanner().attack_records(records, digests)


@pytest.mark.parametrize("executor", [InProcess, Deferred])
def test_a_record_served_again_counts_once_and_a_second_record_under_its_id_is_attacked_and_named(
    small_attacks, detector, embedder, tmp_path: Path, executor: type[InProcess]
) -> None:
    """A store that pages live under writes serves a record again: it is one record, attacked once a run. A store
    that holds one id twice (LanceDB, pgvector without a key, Milvus) serves two records under it: each is attacked
    and reported, the second under its own id (``duplicate_id``), named among the record problems but not counted
    as skipped. Re-scans carry both over; nothing stays behind in the state's list of carried records. The same
    when the executor attacks pages after the loop has read on (the state does not yet hold them)."""
    texts = ["The quarterly report is due on Friday.", "Send the invoice for Dr. Laura Mitchell to laura@example.com."]
    plain, personal = embedder.encode(texts)
    before = [VectorRecord(id="a", vector=plain), VectorRecord(id="b", vector=plain + 0.01)]
    changed = VectorRecord(id="a", vector=personal)
    twin = duplicate_id("a", record_digest(changed))
    scanner, state = Scanner(small_attacks, detector, dimension=384), tmp_path / "state.sqlite"
    leaks = scanner.scan(Pages([changed]), executor=executor()).findings
    assert leaks, "the changed record leaks"
    first = scanner.scan(Pages([*before, before[0]]), batch_size=1, state_path=state, target="t", executor=executor())
    assert (first.records_scanned, first.coverage.records_attacked, first.problems) == (2, 2, []), "served twice"
    both_new = scanner.scan(Pages([before[0], changed]), batch_size=1, executor=executor())  # neither in the state
    assert both_new.records_scanned == 2 and [p.record_id for p in both_new.problems] == [twin]
    assert [f.record_id for f in both_new.findings] == [twin]

    def rescan(*rows: VectorRecord, batch_size: int = 1) -> ScanResult:
        result = scanner.scan(
            Pages(list(rows)), batch_size=batch_size, state_path=state, target="t", executor=executor()
        )
        with sqlite3.connect(state) as db:
            assert db.execute("SELECT COUNT(*) FROM carried").fetchone()[0] == 0
        return result

    for batch_size in (1, 3):  # the second record on a later page, and on the same page
        both = rescan(*before, changed, batch_size=batch_size)  # "a" carried over, then another record under "a"
        assert both.records_scanned == 3 and both.summary.records_skipped == 0
        assert both.coverage.records_attacked == (1 if batch_size == 1 else 0), "attacked once, then carried"
        assert [f.record_id for f in both.findings] == [twin]
        assert [f.model_copy(update={"record_id": "a"}) for f in both.findings] == leaks
        assert [(p.record_id, p.field) for p in both.problems] == [(twin, DUPLICATE_ID)]
        assert "'a'" in both.problems[0].problem and "attacked too" in both.problems[0].problem
    assert rescan(changed, before[1]).coverage.records_attacked == 1, "alone, the changed record is 'a' again"
    assert rescan(changed, before[1]).coverage.records_attacked == 0, "the state holds what was read last"
    first_wins = rescan(changed, before[0], before[1])
    assert [f.record_id for f in first_wins.findings] == ["a"] and first_wins.records_scanned == 3
    assert [p.record_id for p in first_wins.problems] == [duplicate_id("a", record_digest(before[0]))]


class Claims(Attack):
    """An attack plugin that claims the same of every vector, one claim of each kind an attack can make."""

    name = "claims"
    threshold = 0.5

    def fit(self, items, embeddings, progress=None) -> None:
        pass

    def infer(self, vectors, known_texts=None) -> list[Inference]:
        claim = Inference(
            recovered_text="please email ops.desk@example.com today",
            recovered_tokens=(("ops.desk@example.com", 0.8),),
            type_scores={PiiType.PERSON: 0.876, PiiType.SSN: 0.125},
            recovered_pii=((PiiType.PHONE, "+1 212 555 0199", 0.7),),
            exposure_bits={PiiType.SSN: 12.049},
        )
        return [claim] * len(vectors)

    def save(self, directory: Path) -> None:
        pass

    @classmethod
    def load(cls, directory: Path) -> Attack:
        return cls()


class ProbesAddress(Claims):
    """A probe that says every vector holds a postal address, and nothing else."""

    def infer(self, vectors, known_texts=None) -> list[Inference]:
        return [Inference(type_scores={PiiType.ADDRESS: 0.9})] * len(vectors)


def test_severity_is_never_lowered_on_a_detector_no_that_a_validator_contradicts(detector, embedder) -> None:
    """The vector is its stored text's own embedding, and the detector finds no address in the text: that lowers an
    address finding only where the validators agree the text holds none. A part of an address the detector misses
    (a postcode alone) keeps the finding at its severity, said to be not confirmed by the detector."""
    texts = {"missed": "Ship it to my place, postcode SW1A 1AA, next week.", "clean": "Ship it to the usual place."}
    assert not [d for d in detector.detect(texts["missed"]) if d.pii_type is PiiType.ADDRESS], "the gap"
    vectors = embedder.encode(list(texts.values()))
    records = [VectorRecord(rid, v, text=t) for (rid, t), v in zip(texts.items(), vectors, strict=True)]
    scanner = Scanner([ProbesAddress()], detector, dimension=384, source_embedder=embedder)
    findings = {f.record_id: f for f in scanner.scan(ListConnector(records)).findings}
    assert all(f.confirmed_by_source == {"ADDRESS": False} for f in findings.values())
    assert findings["clean"].vector_matches_source is True
    assert findings["missed"].vector_matches_source is None, "not re-embedded: the check could not lower it"
    assert findings["missed"].severity is Severity.MEDIUM
    assert findings["clean"].severity is Severity.LOW


def test_each_evidence_says_which_claim_it_is_with_the_numbers_behind_it(detector) -> None:
    records = [VectorRecord(id="r1", vector=np.full(384, 0.05, dtype=np.float32))]
    result = Scanner([Claims()], detector, dimension=384).scan(ListConnector(records))
    (finding,) = result.findings
    details = {(e.pii_type, e.detail, e.score) for e in finding.evidence}
    assert details == {
        ("PERSON", "probe estimates P(text contains PERSON) = 0.88", 0.876),
        ("PHONE", "claims recovered a PHONE value from the vector", 0.7),
        ("SSN", "the stored SSN is exposed by 12.0 bits (Carlini et al.)", 12.05),
        ("EMAIL", "EmailRecognizer found EMAIL in the recovered words", 0.8),
    }, "the SSN probe's 0.125 is under the threshold; 12.049 bits show as 12.0, scored 12.05"


def test_a_scan_keeps_the_garbage_collector_off_its_models_and_leaves_it_as_it_was(detector) -> None:
    """Objects alive once the scanner is built are frozen while the pages are attacked, and thawed after;
    a freeze someone else made is theirs, left in place."""
    seen: list[int] = []

    class Watched(Pages):
        def iter_batches(self, batch_size: int = 256, resume_from: str | None = None) -> Iterator[Batch]:
            for batch in super().iter_batches(batch_size, resume_from):
                seen.append(gc.get_freeze_count())
                yield batch

    records = [VectorRecord(id=f"r{i}", vector=np.full(384, 0.05, dtype=np.float32)) for i in range(8)]
    scanner = Scanner([Claims()], detector, dimension=384)
    assert gc.get_freeze_count() == 0
    scanner.scan(Watched(records), batch_size=1)
    assert seen[0] == 0 and seen[-1] > 0, seen  # built at the first page (the next two may be read before it)
    assert gc.get_freeze_count() == 0
    theirs = [object()]  # tracked by the collector until frozen; frozen objects are in none of its generations
    gc.freeze()
    try:
        scanner.scan(Watched(records), batch_size=1)
        assert not any(o is theirs for o in gc.get_objects()), "their freeze was thawed"
    finally:
        gc.unfreeze()
    assert any(o is theirs for o in gc.get_objects())


class Recalls(Claims):
    """Recovers one of a few word bags per vector, chosen by its first coordinate, as inversions of similar
    vectors do: the same recovered text comes back on page after page."""

    name = "recalls"
    bags = ("maria lopez called about her refund", "printer jammed again", "send it to ops.desk@example.com")

    def infer(self, vectors, known_texts=None) -> list[Inference]:
        chosen = [self.bags[int(v[0] * 10) % len(self.bags)] for v in vectors]
        return [Inference(recovered_text=t, recovered_tokens=tuple((w, 0.9) for w in t.split())) for t in chosen]


def test_a_recovered_text_is_read_by_the_detector_once_per_scan_and_judged_as_if_read_on_every_page(
    detector, monkeypatch
) -> None:
    read: list[str] = []

    class Counted(PresidioDetector):
        def detect_many(self, texts):
            read.extend(texts)
            return detector.detect_many(texts)

    stored = "Ticket from Jane Doe, born 4 May 1961"
    records = [
        VectorRecord(id=f"r{i}", vector=np.full(384, i / 10 + 0.01, dtype=np.float32), text=stored if i < 4 else None)
        for i in range(12)
    ]

    def scan() -> list:
        read.clear()
        return Scanner([Recalls()], Counted(), dimension=384).scan(Pages(records), batch_size=2).findings

    remembered = scan()
    assert sorted(read) == sorted([*Recalls.bags, stored, stored]), "the stored text is read on each of its 2 pages"
    monkeypatch.setattr("vdbguard.scan.engine.RECOVERED_KEPT", 0)
    forgotten = scan()
    assert len(read) == 6 * 2 + 2, "each of the 6 pages reads its own 2 word bags, and 2 read the stored text"
    assert remembered == forgotten and {f.record_id for f in remembered} >= {"r0", "r2"}


def test_stored_text_findings_name_the_field_mask_the_value_and_can_be_turned_off(
    small_attacks, detector, embedder, tmp_path: Path
) -> None:
    """A record that keeps PII or a secret in its document or payload gets a stored-text finding of its own,
    beside any vector finding: types, fields, masked values (a secret masked even when PII is shown). A record whose
    text holds nothing gets none; a scan told to report vector findings only reports none of this kind."""
    texts = {
        "doc": "Refund requested by Dana Whitfield, card 4111 1111 1111 1111, charged twice.",
        "clean": "The printer on the third floor jams again.",
        "payload": "Quarterly access review.",
    }
    vectors = embedder.encode(list(texts.values()))
    records = [VectorRecord(rid, vector, text=text) for (rid, text), vector in zip(texts.items(), vectors, strict=True)]
    records[2].payload = {"owner": "ops@example.org", "note": "db_password = 'Tr0ub4dor&3xyz'"}
    path = tmp_path / "store"
    with ChromaConnector(collection="notes", path=path, create=True) as store:
        store.upsert(records)

    def stored(**options) -> dict[str, Finding]:
        scanner = Scanner(small_attacks, detector, dimension=384, **options)
        with ChromaConnector(collection="notes", path=path) as connector:
            found = scanner.scan(connector).findings
        return {f.record_id: f for f in found if f.kind == "stored_text"}

    shown = stored(finding_kinds=("vector", "stored_text"), mask_pii=False)
    assert set(shown) == {"doc", "payload"}
    doc, payload = shown["doc"], shown["payload"]
    assert doc.fields == ["document"] and {"PERSON", "CREDIT_CARD"} <= set(doc.pii_types)
    assert doc.severity.rank >= Severity.HIGH.rank, "a card is high, and a name linked to it one worse"
    assert "4111 1111 1111 1111" in {e.recovered for e in doc.evidence}, "--show-pii shows PII"
    assert set(payload.fields) == {"payload.owner", "payload.note"} and set(payload.pii_types) == {"EMAIL", "SECRET"}
    secret = next(e for e in payload.evidence if e.pii_type == "SECRET")
    assert secret.attack == "stored-text" and "Tr0ub4dor&3xyz" not in (secret.recovered or ""), "secrets: never shown"
    masked = stored(finding_kinds=("vector", "stored_text"))
    assert "Dana" not in masked["doc"].model_dump_json() and "4111 1111" not in masked["doc"].model_dump_json()
    assert stored(finding_kinds=("vector",)) == {}
