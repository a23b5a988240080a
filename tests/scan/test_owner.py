"""Owner-side calibration, the fused verdict, and scanning a store whose model cannot run here.

The stores are demo-shaped notes (half with PII), embedded for real. Most keep their text, as
LangChain or Chroma stores do; a tail keeps none, and those records can only be judged by their
vectors. The quality bounds below are loose on purpose (BENCHMARKS.md has the measured numbers):
they catch a verdict that flags everything or nothing, not a point of recall.
"""

from __future__ import annotations

import json
import stat
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import ListConnector
from vdbguard.attacks.pii_probe import PiiProbeAttack
from vdbguard.corpus import LabelledText
from vdbguard.demo import demo_texts
from vdbguard.errors import VdbguardError
from vdbguard.pii import PiiType
from vdbguard.records import VectorRecord
from vdbguard.scan import ScanSettings, ScanTarget, scan_collection
from vdbguard.scan.engine import FUSED
from vdbguard.scan.owner import CalibrationOptions, LabelledSample, StoreProbe, fitted_for
from vdbguard.scan.verdict import StackedVerdict

pytestmark = pytest.mark.slow(minutes=3)

WITH_TEXT, WITHOUT_TEXT = 420, 80
# 420 labelled records leave ~200 clean ones to set cutoffs on: a 2% record-level budget would be four
# records across nine types. A store this small gets a looser target; the default sample is 3,000.
SMALL_STORE_FPR = 0.1


def store(embedder, n_text: int = WITH_TEXT, n_bare: int = WITHOUT_TEXT) -> tuple[list[VectorRecord], dict[str, bool]]:
    """Records with text first, then records whose text the store did not keep; and the truth per id."""
    notes = demo_texts(n_text + n_bare, seed=4242)
    vectors = embedder.encode([text for text, _ in notes])
    records, truth = [], {}
    for i, ((text, has_pii), vector) in enumerate(zip(notes, vectors, strict=True)):
        record_id = f"note-{i}"
        payload = {"text": text} if i < n_text else {"topic": "kept no text"}
        records.append(VectorRecord(id=record_id, vector=vector, payload=payload, collection="notes"))
        truth[record_id] = has_pii
    return records, truth


def bare_quality(report, records: list[VectorRecord], truth: dict[str, bool]) -> tuple[float, float]:
    """Recall and false-positive rate on the records that keep no text (judged by the vector alone)."""
    flagged = {finding.record_id for finding in report.findings}
    bare = [r.id for r in records if r.source_text is None]
    positives = [i for i in bare if truth[i]]
    negatives = [i for i in bare if not truth[i]]
    recall = sum(i in flagged for i in positives) / len(positives)
    return recall, sum(i in flagged for i in negatives) / len(negatives)


def scan(records, embedder, fused: bool = True, **calibration) -> object:
    return scan_collection(
        ListConnector(records),
        ScanTarget("list", "memory"),
        ScanSettings(profile="small", calibration=CalibrationOptions(**calibration), fused=fused),
        embedder=embedder,
    )


def test_stacked_verdict_keeps_its_false_positive_rate_on_new_records_and_round_trips() -> None:
    def draw(n: int, seed: int):
        rng = np.random.default_rng(seed)
        has = rng.random(n) < 0.3
        scores = []
        for positive in has:
            row = {("probe", "PERSON"): float(rng.normal(2.0 if positive else 0.0, 1.0))}
            if rng.random() < 0.5:  # a second attack that speaks only sometimes, and knows nothing
                row[("words", "PERSON")] = float(rng.random())
            scores.append(row)
        return scores, [frozenset({PiiType.PERSON}) if positive else frozenset() for positive in has]

    scores, labels = draw(3000, seed=1)
    verdict = StackedVerdict.fit(scores, labels, target_fpr=0.05)
    fresh, fresh_labels = draw(3000, seed=2)
    flagged = verdict.probabilities(fresh)["PERSON"] >= verdict.cutoffs["PERSON"]
    truth = np.array([bool(label) for label in fresh_labels])
    assert flagged[~truth].mean() <= 0.07  # 5% target, plus sampling slack on 2,100 clean rows
    assert flagged[truth].mean() >= 0.5  # two standard deviations of separation give ~0.64 at 5%
    again = StackedVerdict.from_json(verdict.to_json())
    assert np.allclose(again.probabilities(fresh)["PERSON"], verdict.probabilities(fresh)["PERSON"])


def test_new_records_are_scored_on_the_scale_the_verdict_was_fitted_on() -> None:
    """The probe that judges new records is the folds' probes averaged in logit space, not a refit on every record:
    the verdict's cutoffs were fitted on the folds' scores, and the refit's scale strayed from theirs."""
    from scipy.special import expit, logit

    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 16)).astype(np.float32)
    has_name = x[:, 0] + 0.5 * rng.normal(size=400) > 0.8
    items = [LabelledText("", frozenset({PiiType.PERSON}) if h else frozenset(), {}, "store") for h in has_name]
    folds = [StoreProbe(seed=seed) for seed in range(3)]
    for k, probe in enumerate(folds):
        rows = np.arange(400) % 4 != k
        probe.fit([item for item, keep in zip(items, rows, strict=True) if keep], x[rows])
    averaged = StoreProbe.averaged(folds)
    new = rng.normal(size=(50, 16)).astype(np.float32)
    each = np.stack([logit(probe.probabilities(new)[PiiType.PERSON]) for probe in folds])
    assert set(averaged.models) == {PiiType.PERSON}
    np.testing.assert_allclose(averaged.probabilities(new)[PiiType.PERSON], expit(each.mean(0)), rtol=1e-4)
    assert np.ptp(each, axis=0).max() > 0.01  # the folds disagree, so the mean is a test of something


def test_the_store_probe_reads_a_name_the_vectors_hold_in_no_one_direction(tmp_path: Path) -> None:
    """Records with a name at either end of one direction: a linear probe has no side to take, the kernel reads both.
    Saved and loaded, it scores alike."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(1)
    x = rng.normal(size=(900, 16)).astype(np.float32)
    has_name = np.abs(x[:, 0]) > 1.0
    items = [LabelledText("", frozenset({PiiType.PERSON}) if h else frozenset(), {}, "store") for h in has_name]
    kernel, linear = StoreProbe(), PiiProbeAttack()
    kernel.fit(items[:600], x[:600])
    linear.fit(items[:600], x[:600])
    new, truth = x[600:], has_name[600:]
    assert roc_auc_score(truth, kernel.probabilities(new)[PiiType.PERSON]) > 0.85
    assert roc_auc_score(truth, linear.probabilities(new)[PiiType.PERSON]) < 0.7
    kernel.save(tmp_path / "probe")
    loaded = StoreProbe.load(tmp_path / "probe")
    np.testing.assert_allclose(loaded.probabilities(new)[PiiType.PERSON], kernel.probabilities(new)[PiiType.PERSON])

    linear.save(tmp_path / "linear")  # what a calibration saved before the kernel held
    with pytest.raises(VdbguardError, match="older vdbguard"):
        StoreProbe.load(tmp_path / "linear")


def test_a_jobs_calibration_is_fitted_anew_for_another_kind_of_store_probe(monkeypatch, tmp_path: Path) -> None:
    """A job's state keeps its calibration; one saved with the linear probe would not load into the kernel one."""
    from vdbguard.scan import run

    state = tmp_path / "state.db"
    now = run._calibration_folder(state, "chroma:/store", ["presidio", 17])
    monkeypatch.setattr(StoreProbe, "version", 2)
    assert run._calibration_folder(state, "chroma:/store", ["presidio", 17]) != now


def test_the_budget_goes_to_the_type_that_buys_recall() -> None:
    """A type whose scores say nothing spends none of the false-positive budget; the informative one gets it all."""
    rng = np.random.default_rng(4)
    kinds = rng.choice(["", "PERSON", "SSN"], size=4000, p=[0.6, 0.3, 0.1])
    scores = [
        {("probe", "PERSON"): float(rng.normal(2.0 * (kind == "PERSON"), 1.0)), ("probe", "SSN"): float(rng.random())}
        for kind in kinds
    ]
    labels = [frozenset({PiiType(kind)}) if kind else frozenset() for kind in kinds]
    verdict = StackedVerdict.fit(scores, labels, 0.05)
    probabilities = verdict.probabilities(scores)
    clean = kinds == ""
    assert (probabilities["SSN"][clean] >= verdict.cutoffs["SSN"]).mean() < 0.005
    assert 0.03 <= (probabilities["PERSON"][clean] >= verdict.cutoffs["PERSON"]).mean() <= 0.06


def test_default_scan_decides_by_the_verdict_fitted_on_held_out_real_text(embedder, model_cache: Path) -> None:
    """No text in the store: one stacked verdict, fitted on the real-text calibration split, decides."""
    records, truth = store(embedder, n_text=0, n_bare=300)
    report = scan(records, embedder, mode="off")
    assert report.calibration is None and {q.mode for q in report.expected_quality} == {"default"}
    assert list(model_cache.glob(f"models/{embedder.fingerprint}/verdict-*.json"))
    for finding in (f for f in report.findings if f.kind == "vector"):  # stored text: no verdict, the detector
        fused = [e for e in finding.evidence if e.attack == FUSED]
        assert fused and all(e.score >= e.threshold for e in fused)
        assert {e.pii_type for e in fused} == set(finding.pii_types)
    recall, false_positives = bare_quality(report, records, truth)
    assert recall >= 0.5 and false_positives <= 0.25, (recall, false_positives)

    any_attack = scan(records, embedder, fused=False, mode="off")
    assert {q.mode for q in any_attack.expected_quality} == {"any"}
    for finding in any_attack.findings:
        assert finding.evidence and all(e.attack != FUSED and e.score >= e.threshold for e in finding.evidence)


def test_owner_calibration_judges_records_without_text_and_can_be_reused(
    embedder, model_cache: Path, tmp_path: Path
) -> None:
    records, truth = store(embedder)
    saved = tmp_path / "calibration"
    saved.mkdir(mode=0o755)  # a folder the user made: the calibration describes the store, so it becomes owner-only
    report = scan(records, embedder, mode="on", sample=WITH_TEXT, target_fpr=SMALL_STORE_FPR, save_to=saved)
    assert stat.S_IMODE(saved.stat().st_mode) == 0o700

    calibration = report.calibration
    assert calibration is not None and calibration.used and calibration.records_labelled == WITH_TEXT
    assert report.expected_quality and {q.mode for q in report.expected_quality} == {"owner"}
    assert 0.0 <= calibration.held_out_false_positive_rate <= 1.0 and 0.0 <= calibration.held_out_recall <= 1.0
    assert calibration.per_type["PERSON"].auc > 0.8
    recall, false_positives = bare_quality(report, records, truth)
    assert recall >= 0.5 and false_positives <= 0.25, (recall, false_positives)
    for finding in (f for f in report.findings if f.kind == "vector"):  # stored text: no verdict, the detector
        fused = [e for e in finding.evidence if e.attack == FUSED]
        assert fused and all(e.score >= e.threshold for e in fused)
        assert {e.pii_type for e in fused} == set(finding.pii_types)

    bare = [r for r in records if r.source_text is None]
    reused = scan(bare, embedder, mode="off", load_from=saved)
    assert reused.calibration is not None and reused.calibration.loaded_from == str(saved)
    first = {f.record_id: f.pii_types for f in report.findings if f.record_id in {r.id for r in bare}}
    assert {f.record_id: f.pii_types for f in reused.findings} == first

    # on a machine whose float noise hashes the same model to another fingerprint, the probes still match
    saved_file = saved / "calibration.json"
    payload = json.loads(saved_file.read_text())
    assert np.allclose(payload["embedder_probes"], embedder.probe_embeddings)
    saved_file.write_text(json.dumps({**payload, "embedder": "fingerprint-elsewhere"}))
    moved = scan(bare, embedder, mode="off", load_from=saved)
    assert {f.record_id: f.pii_types for f in moved.findings} == first


def test_a_saved_calibration_is_refused_for_another_model_and_kept_across_float_noise() -> None:
    probes = np.random.default_rng(0).normal(size=(3, 8)).round(6).tolist()
    saved = {"embedder": "aaaa", "embedder_probes": probes}
    assert fitted_for(saved, "aaaa", None)
    assert fitted_for(saved, "bbbb", (np.asarray(probes) + 2e-4).tolist())
    assert not fitted_for(saved, "bbbb", (np.asarray(probes) + 1e-2).tolist())
    assert not fitted_for(saved, "bbbb", None)  # --embedder store: only the fingerprint can say
    assert not fitted_for({"embedder": "aaaa"}, "bbbb", probes)  # saved before probes were recorded


def test_records_labelled_clean_whose_text_nearly_named_someone_set_no_cutoff() -> None:
    """A person the detector missed, counted clean, sits among the top clean scores that set the cutoffs."""
    from tests.detectors.test_tagger import CLEAN, NEARLY_NAMED
    from vdbguard.detectors import load_detector

    detector = load_detector()
    texts = [*NEARLY_NAMED, *CLEAN, "Recompute the lower diagonal of the matrix. cc T. Lindqvist"]
    records = [VectorRecord(f"r{i}", [0.5, 0.5], payload={"text": text}) for i, text in enumerate(texts)]
    sample = LabelledSample(records, detector.read_many(texts))
    assert sample.labels == [frozenset()] * 4 + [frozenset({PiiType.PERSON})]
    assert sample.sure_rows() == [2, 3, 4]  # a record with PII stays, whatever else was nearly found in it


def test_auto_skips_a_store_with_little_text_and_on_refuses_it(embedder, model_cache: Path) -> None:
    records, _ = store(embedder, n_text=60, n_bare=0)
    uncalibrated = scan(records, embedder, mode="auto")
    assert uncalibrated.calibration is None and {q.mode for q in uncalibrated.expected_quality} == {"default"}
    with pytest.raises(VdbguardError, match="at least 300"):
        scan(records, embedder, mode="on")


def test_a_scan_returns_only_once_what_calibration_loads_meanwhile_has_loaded(
    embedder, model_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that exits while a daemon thread still loads torch's native code aborts ("terminate called", exit -6,
    after a finished scan): the scan joins what calibration loads meanwhile before it returns."""
    from vdbguard.scan import owner

    loaded = threading.Event()

    def slow(meanwhile: object) -> object:
        def load() -> None:
            time.sleep(1.5)
            loaded.set()

        return load

    monkeypatch.setattr(owner, "_preloading", slow)
    records, _ = store(embedder, n_text=60, n_bare=0)
    report = scan(records, embedder, mode="auto")  # too little text: calibration returns at once
    assert report.calibration is None and loaded.is_set()


def test_a_store_too_clean_to_calibrate_on_is_judged_by_the_packaged_verdict(
    embedder, local_embedder, model_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A clean store, or one redacted well, has too few records with PII to fit a probe: the scan says so in its log
    and its report and judges by the packaged verdict, even with calibration insisted on; it never fails for it."""
    notes = [text for text, has_pii in demo_texts(800, seed=4242) if not has_pii][:330]

    def records_of(model) -> list[VectorRecord]:
        vectors = model.encode(notes)
        pairs = enumerate(zip(notes, vectors, strict=True))
        return [VectorRecord(f"clean-{i}", vector, payload={"text": text}) for i, (text, vector) in pairs]

    with caplog.at_level("WARNING", logger="vdbguard.scan.owner"):
        report = scan(records_of(embedder), embedder, mode="on")
    assert report.calibration is None and report.verdict is not None
    assert report.verdict.name == "packaged" and "too few to fit a probe" in report.verdict.reason
    assert "the packaged verdict judges this scan instead" in caplog.text
    assert {q.mode for q in report.expected_quality} == {"default"}
    for finding in (f for f in report.findings if f.kind == "vector"):
        assert any(e.attack == FUSED for e in finding.evidence)

    own_model = scan(records_of(local_embedder), None, mode="auto")  # a model that cannot run here
    assert own_model.verdict is not None and own_model.verdict.name == "packaged"
    assert {a.name for a in own_model.attacks} == {"pii-probe@aligned", "bag-of-words@aligned"}
    for finding in (f for f in own_model.findings if f.kind == "vector"):
        assert any(e.attack == FUSED for e in finding.evidence), "the packaged verdict, over the aligned attacks"


def test_store_embedder_scans_the_vectors_of_a_model_it_cannot_run(local_embedder, embedder, model_cache: Path) -> None:
    """128-d vectors of a model the scan is not told about: probes learn its space, attacks are aligned."""
    records, truth = store(local_embedder)
    report = scan(records, None, mode="auto", sample=WITH_TEXT, target_fpr=SMALL_STORE_FPR)

    assert (report.embedder.name == "store" and report.embedder.dimension is None) or report.embedder.dimension == 128
    calibration = report.calibration
    assert calibration is not None and calibration.aligned_to == embedder.name
    assert {q.mode for q in report.expected_quality} == {"store"}
    assert calibration.alignment_cosine > 0.5
    recall, false_positives = bare_quality(report, records, truth)
    assert recall >= 0.5 and false_positives <= 0.25, (recall, false_positives)
    assert {a.name for a in report.attacks} == {"pii-probe@store", "bag-of-words@aligned"}


def test_store_embedder_refuses_to_run_without_calibration(local_embedder, model_cache: Path) -> None:
    records, _ = store(local_embedder, n_text=20, n_bare=0)
    with pytest.raises(VdbguardError, match="needs owner-side calibration"):
        scan(records, None, mode="off")


def test_a_job_state_keeps_the_owner_calibration_so_reruns_judge_alike(embedder, model_cache: Path, tmp_path) -> None:
    records, _ = store(embedder)
    state = tmp_path / "job.sqlite"
    options = CalibrationOptions(mode="on", sample=WITH_TEXT, target_fpr=SMALL_STORE_FPR)

    def run(rows: list[VectorRecord]):
        return scan_collection(
            ListConnector(rows), ScanTarget("list", "memory"),
            ScanSettings(profile="small", calibration=options, state_path=state), embedder=embedder,
        )  # fmt: skip

    first = run(records)
    assert first.calibration is not None and first.calibration.loaded_from is None
    last = records[-1]
    changed = [*records[:-1], VectorRecord(id=last.id, vector=-last.vector, payload=last.payload, collection="notes")]
    second = run(changed)
    assert second.coverage.records_attacked == 1 and second.coverage.records_carried_over == len(records) - 1
    assert second.calibration.loaded_from is not None and ".calibration" in second.calibration.loaded_from
    kept = {f.record_id: f for f in first.findings if f.record_id != last.id}
    assert {f.record_id: f for f in second.findings if f.record_id != last.id} == kept
