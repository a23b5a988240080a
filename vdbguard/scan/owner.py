"""Owner-side calibration: judge a store by what its own labelled records say, then scan by vector alone.

Many stores keep their text beside the vector (LangChain ``page_content``, Chroma documents, payload
fields). The detector labels a sample of those texts; a probe per PII type is fitted on the
sample's vectors, which puts it on the store's own distribution (its embedder, topics and house
style) instead of the project corpus'; and a stacked verdict over every attack (``scan.verdict``)
keeps the share of clean records flagged under a stated false-positive rate. Everything is
cross-fitted, so no number in the report comes from a model that saw the record it judges. Every
record, with or without text, is then judged by its vector alone.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from vdbguard.attacks import Attack, Inference
from vdbguard.attacks.alignment import AlignedAttack, load_mapping, ridge_map
from vdbguard.attacks.base import l2_normalise, labelled_split, learned, one_blas_thread, platt
from vdbguard.attacks.pii_probe import PiiProbeAttack, can_fit, inferences
from vdbguard.cache import private_dir
from vdbguard.config import JobSettings, job_default
from vdbguard.connectors.base import Connector
from vdbguard.corpus import LabelledText
from vdbguard.detectors.base import Detection, Detector, Reading
from vdbguard.embedders import Embedder
from vdbguard.embedders.loading import same_probe_embeddings
from vdbguard.errors import RecordError, VdbguardError
from vdbguard.pii import PROBED_TYPES, AnyPiiType, PiiType
from vdbguard.progress import Advance, ProgressSink, Silent
from vdbguard.records import VectorRecord
from vdbguard.reports.schema import OwnerCalibration, TypeQuality
from vdbguard.scan.engine import Scanner
from vdbguard.scan.verdict import ScoreKey, StackedVerdict

MIN_RECORDS = 300
DEFAULT_SAMPLE: int = job_default(JobSettings, "calibration_sample")
DEFAULT_TARGET_FPR: float = job_default(JobSettings, "target_fpr")
PROBE_FOLDS = 5
LOOK_AHEAD = 10
REPORT_FOLDS = 3
_CALIBRATION_FILE = "calibration.json"
log = logging.getLogger("vdbguard.scan.owner")
_PRELOADS: list[threading.Thread] = []  # started by ``labelled_sample``, joined by ``wait_for_preloads``


@dataclass(frozen=True)
class KernelModel:
    """A support-vector machine with an RBF kernel over some rows of its probe's basis (``support``), its decision
    value Platt-scaled on held-out rows to a logit."""

    support: np.ndarray  # indices into the probe's basis
    coefficients: np.ndarray
    bias: float
    gamma: float
    slope: float = 1.0
    intercept: float = 0.0

    def logits(self, distances: np.ndarray) -> np.ndarray:
        """From each row's squared distance to every vector of the basis."""
        kernel = np.exp(-self.gamma * distances[:, self.support])
        return self.slope * (kernel @ self.coefficients + self.bias) + self.intercept


@dataclass(eq=False)
class StoreProbe(Attack):
    """A probe per PII type fitted on one store's own (vector, detector label) pairs: an RBF support-vector machine.
    With it owner-side calibration found 0.55 of three dev stores' records that name someone, at 2% false positives,
    where ``pii-probe``'s linear model refitted alike found 0.42 (BENCHMARKS.md, "Verdicts on real text"). Its
    support vectors are rows of one ``basis``, so a record's distances are computed once for every type and fold."""

    name: ClassVar[str] = "pii-probe@store"
    description: ClassVar[str] = (
        "RBF support-vector machine per PII type fitted on this store's vectors, labelled by the detector on its "
        "stored text"
    )
    version: ClassVar[int] = 3
    kind: ClassVar[str] = "probe"
    threshold: float = 0.5
    regularisation: float = 3.0
    seed: int = 0
    basis: np.ndarray = learned(factory=lambda: np.zeros((0, 0), dtype=np.float32))
    models: dict[PiiType, list[KernelModel]] = learned(factory=dict)
    _metrics: dict[str, float] = learned(factory=dict)

    def fit(self, items: Sequence[LabelledText], embeddings: np.ndarray, progress: Advance | None = None) -> None:
        from sklearn.metrics import roc_auc_score
        from sklearn.svm import SVC

        items, x, train, calibration = labelled_split(items, embeddings, self.seed)
        gamma = 1.0 / (x.shape[1] * float(x[train].var()))  # scikit-learn's "scale"
        kernel = np.exp(-gamma * _squared_distances(x, x[train]))  # every type's SVM reads the same one
        fitted: dict[PiiType, tuple[SVC, float, float]] = {}
        for pii_type in PROBED_TYPES:
            y = np.array([pii_type in item.pii for item in items])
            if can_fit(y, train, calibration):
                with one_blas_thread():
                    svm = SVC(C=self.regularisation, kernel="precomputed")
                    svm.fit(kernel[train], y[train])
                    held = svm.decision_function(kernel[calibration])
                    fitted[pii_type] = (svm, *platt(held, y[calibration]))
                self._metrics[f"auc_{pii_type.value}"] = round(float(roc_auc_score(y[calibration], held)), 4)
        rows = sorted({int(i) for svm, _, _ in fitted.values() for i in svm.support_})
        self.basis = x[train][rows]
        at = {row: k for k, row in enumerate(rows)}
        for pii_type, (svm, slope, intercept) in fitted.items():
            support = np.array([at[int(i)] for i in svm.support_])
            coefficients = svm.dual_coef_[0].astype(np.float32)
            self.models[pii_type] = [
                KernelModel(support, coefficients, float(svm.intercept_[0]), gamma, slope, intercept)
            ]

    @classmethod
    def averaged(cls, folds: Sequence[StoreProbe]) -> StoreProbe:
        """One probe whose logit is the mean of the folds' calibrated logits: the verdict's cutoffs were fitted on
        these folds' scores, and a probe refitted on every record scored new records on another scale, so the share
        of clean records flagged strayed from the stated rate."""
        probe = cls(regularisation=folds[0].regularisation, seed=folds[0].seed)
        # the folds share most records: each kept once
        probe.basis, at = np.unique(np.concatenate([fold.basis for fold in folds]), axis=0, return_inverse=True)
        offset = 0
        for fold in folds:
            for pii_type, models in fold.models.items():
                moved = [replace(model, support=at.ravel()[model.support + offset]) for model in models]
                probe.models.setdefault(pii_type, []).extend(moved)
            offset += len(fold.basis)
        return probe

    def probabilities(self, vectors: np.ndarray) -> dict[PiiType, np.ndarray]:
        from scipy.special import expit

        distances = _squared_distances(l2_normalise(vectors), self.basis)
        return {t: expit(np.mean([m.logits(distances) for m in models], axis=0)) for t, models in self.models.items()}

    def infer(self, vectors: np.ndarray, known_texts: Sequence[str | None] | None = None) -> list[Inference]:
        return inferences(self.probabilities(vectors), len(vectors))

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, np.ndarray] = {"basis": self.basis}
        types = {}
        for pii_type, models in self.models.items():
            types[pii_type.value] = len(models)
            for i, model in enumerate(models):
                arrays[f"{pii_type.value}.{i}.support"] = model.support
                arrays[f"{pii_type.value}.{i}.coefficients"] = model.coefficients
                arrays[f"{pii_type.value}.{i}.params"] = np.array(
                    [model.bias, model.gamma, model.slope, model.intercept], dtype=np.float64
                )
        np.savez(directory / "kernels.npz", **arrays)
        self.write_config(directory, {"types": types})

    @classmethod
    def load(cls, directory: Path) -> StoreProbe:
        probe, config = cls.from_config(directory)
        if not (directory / "kernels.npz").is_file():
            raise VdbguardError(
                f"the store probe in {directory} was saved by an older vdbguard", "calibrate again to save a new one"
            )
        arrays = np.load(directory / "kernels.npz")
        probe.basis = arrays["basis"]
        for value, count in config["types"].items():
            for i in range(count):
                bias, gamma, slope, intercept = (float(v) for v in arrays[f"{value}.{i}.params"])
                support, coefficients = arrays[f"{value}.{i}.support"], arrays[f"{value}.{i}.coefficients"]
                model = KernelModel(support, coefficients, bias, gamma, slope, intercept)
                probe.models.setdefault(PiiType(value), []).append(model)
        return probe


def _squared_distances(x: np.ndarray, basis: np.ndarray) -> np.ndarray:
    return np.maximum((x * x).sum(1)[:, None] + (basis * basis).sum(1)[None, :] - 2 * x @ basis.T, 0)


Mode = Literal["auto", "on", "off"]


@dataclass(frozen=True)
class CalibrationOptions:
    """``auto`` calibrates when the store keeps text for at least MIN_RECORDS records; ``on`` insists."""

    mode: Mode = "auto"
    sample: int = DEFAULT_SAMPLE
    target_fpr: float = DEFAULT_TARGET_FPR
    save_to: Path | None = None
    load_from: Path | None = None


AUTO = CalibrationOptions()
OFF = CalibrationOptions(mode="off")


@dataclass
class LabelledSample:
    records: list[VectorRecord]
    readings: list[Reading]
    labels: list[frozenset[AnyPiiType]] = field(init=False)

    def __post_init__(self) -> None:
        self.labels = [frozenset(d.pii_type for d in reading.detections) for reading in self.readings]

    def sure_rows(self) -> list[int]:
        """The records to judge the verdict on: all but those labelled clean whose text the detector was unsure of. A
        person the detector missed, counted clean, sits among the top clean scores that set the cutoffs."""
        return [
            i
            for i, (label, reading) in enumerate(zip(self.labels, self.readings, strict=True))
            if label or not reading.unsure
        ]

    def detections_by_text(self) -> dict[str, list[Detection]]:
        """What the detector found in each labelled text: the scan reads the same texts and need not detect twice."""
        return {r.source_text or "": found.detections for r, found in zip(self.records, self.readings, strict=True)}


@dataclass
class Calibrated:
    """What calibration hands the scan: the attacks to run, the verdict over them, what the report says."""

    attacks: list[Attack]
    verdict: StackedVerdict
    report: OwnerCalibration
    detected: dict[str, list[Detection]] = field(default_factory=dict)


@dataclass
class Uncalibrated:
    """Why the scan judges by the packaged verdict instead (the log and the report say it). ``aligned``: for a
    store whose model cannot run here, the packaged attacks mapped into its space, fitted on the sample's text."""

    reason: str
    aligned: list[AlignedAttack] | None = None
    detected: dict[str, list[Detection]] = field(default_factory=dict)


class TooFewPositives(VdbguardError):
    """The labelled sample holds too few records with PII to fit any probe: a store that is clean, or was
    redacted well, is judged by the packaged verdict instead."""


def labelled_sample(
    connector: Connector,
    detector: Detector,
    dimension: int | None,
    limit: int,
    batch_size: int = 256,
    progress: ProgressSink | None = None,
    records_in_store: int | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> LabelledSample:
    """The first ``limit`` records that keep their text and a usable vector, labelled by the detector.

    Read-only, like the scan. Records are taken in the store's own order (if that order tracks content,
    e.g. insertion by source, pass a ``limit`` that covers the store), and the search stops after
    ``LOOK_AHEAD × limit`` records, or after ``limit`` without a text: a store that keeps none is not read twice.
    Labelled page by page, by the detector (and its workers) the scan then uses, so progress can follow.
    ``meanwhile`` runs in a background thread once a page holds text: what the scan needs next loads meanwhile.
    """
    records: list[VectorRecord] = []
    readings: list[Reading] = []
    read = 0
    total = limit if records_in_store is None else min(limit, records_in_store)
    with contextlib.ExitStack() as stack:  # the task shows once the store proves to keep text
        advance: Advance = lambda n: None  # noqa: E731
        for batch in connector.iter_batches(batch_size=batch_size):
            texts = batch.source_texts()[: LOOK_AHEAD * limit - read]
            read += len(texts)
            rows = [row for row, text in enumerate(texts) if text is not None][: limit - len(records)]
            page = []
            for record in batch.take(rows) if rows else []:
                with contextlib.suppress(RecordError):  # the scan itself reports bad records
                    record.checked_vector(dimension, attackable=True)
                    page.append(record)
            first = page and not records  # the store keeps text: the sample's texts are coming, then what inversion
            if first:  # recovers from their vectors
                advance = stack.enter_context(
                    (progress or Silent()).task("Calibrating: labelling the store's text", total)
                )
                detector.expect(2 * total)
            readings += detector.read_many([record.source_text or "" for record in page])
            if first and meanwhile is not None:  # after the detector's imports: two threads importing one package race
                preload = threading.Thread(target=meanwhile, daemon=True, name="vdbguard-preload")
                preload.start()
                _PRELOADS.append(preload)
            records += page
            advance(len(page))
            if len(records) >= limit or read >= LOOK_AHEAD * limit or (read >= limit and not records):
                break
    return LabelledSample(records, readings)


def calibrate_on_store(
    sample: LabelledSample,
    attacks: Sequence[Attack],
    detector: Detector,
    dimension: int | None,
    *,
    target_fpr: float = DEFAULT_TARGET_FPR,
    seed: int = 0,
    align_to: Embedder | None = None,
    step: Advance | None = None,
) -> Calibrated:
    """Refit ``pii-probe`` on the store, then fit the verdict over every attack for ``target_fpr``; ``step`` hears
    each fold fitted (``PROBE_FOLDS + REPORT_FOLDS + 1`` in all).

    With ``align_to`` (a store whose own model cannot run here), the other attacks were trained for
    that packaged embedder and run on store vectors mapped into its space (``scan.alignment``).

    Records labelled clean whose text the detector was unsure of (``Reading.unsure``) teach the probe but are
    left out of the verdict and the held-out quality.
    Cross-fitted, so every record both teaches and is measured without being scored by a model that
    saw it: each record's probe score comes from a probe fitted on the other folds, and the held-out
    quality in the report from verdicts fitted without the fold they are measured on.
    """
    advance = step or (lambda n: None)
    n = len(sample.records)
    if n < MIN_RECORDS:
        raise VdbguardError(
            f"owner-side calibration needs text for at least {MIN_RECORDS} records; the store keeps text for {n}",
            "scan without it (--owner-calibration off), or calibrate on a collection that keeps its text",
        )
    others = [a for a in attacks if a.name != PiiProbeAttack.name]
    vectors = l2_normalise(np.stack([record.checked_vector(dimension) for record in sample.records]))
    targets = l2_normalise(align_to.encode([r.source_text or "" for r in sample.records])) if align_to else None

    def attacks_for(rows: np.ndarray, probe: StoreProbe) -> tuple[list[Attack], np.ndarray | None]:
        """The store probe beside every other attack, mapped by an alignment fitted on ``rows`` when there is one."""
        if targets is None:
            return [probe, *others], None
        mapping = ridge_map(vectors[rows], targets[rows])
        return [probe, *(AlignedAttack(attack, mapping) for attack in others)], mapping

    folds = np.array_split(np.random.default_rng(seed).permutation(n), PROBE_FOLDS)
    detected = sample.detections_by_text()  # and what the folds' inversions recover: the scan reads both again
    scores: list[dict[ScoreKey, float]] = [{} for _ in range(n)]
    alignment_cosines: list[float] = []
    fold_probes: list[StoreProbe] = []
    for k, rows in enumerate(folds):
        rest = np.concatenate([fold for j, fold in enumerate(folds) if j != k])
        fold_probes.append(_fit_probe(sample, rest, vectors, seed))
        fold_attacks, mapping = attacks_for(rest, fold_probes[-1])
        scanner = Scanner(fold_attacks, detector, dimension, detected=detected)
        fold_scores = scanner.evidence_scores([sample.records[i] for i in rows])
        for i, row_scores in zip(rows, fold_scores, strict=True):
            scores[i] = row_scores
        if mapping is not None and targets is not None:
            mapped = l2_normalise(vectors[rows] @ mapping)
            alignment_cosines += np.sum(mapped * targets[rows], axis=1).tolist()
        advance(1)
    final_attacks, _ = attacks_for(np.arange(n), StoreProbe.averaged(fold_probes))
    sure = sample.sure_rows()
    scores = [scores[i] for i in sure]
    labels = [sample.labels[i] for i in sure]
    verdict = StackedVerdict.fit(scores, labels, target_fpr=target_fpr, seed=seed)
    advance(1)
    report = OwnerCalibration(
        used=True,
        records_labelled=n,
        records_unsure=n - len(sure),
        records_with_pii=sum(1 for label in labels if label),
        folds={"probe": PROBE_FOLDS, "held_out": REPORT_FOLDS},
        target_false_positive_rate=target_fpr,
        fused_cutoffs=verdict.cutoffs,
        aligned_to=align_to.name if align_to else None,
        alignment_cosine=round(float(np.mean(alignment_cosines)), 4) if alignment_cosines else None,
        **_held_out_quality(scores, labels, target_fpr, seed, advance),
    )
    return Calibrated(final_attacks, verdict, report, detected)


def _fit_probe(sample: LabelledSample, rows: np.ndarray, vectors: np.ndarray, seed: int) -> StoreProbe:
    probe = StoreProbe(seed=seed)
    items = [LabelledText(sample.records[i].source_text or "", sample.labels[i], {}, "store") for i in rows]
    probe.fit(items, vectors[rows])
    if not probe.models:
        raise TooFewPositives(
            f"owner-side calibration found {sum(1 for label in sample.labels if label)} records with PII among "
            f"{len(sample.records)} labelled: too few to fit a probe",
            "raise --calibration-sample to label more of the store",
        )
    return probe


def _held_out_quality(
    scores: Sequence[dict[ScoreKey, float]],
    labels: Sequence[frozenset[AnyPiiType]],
    target_fpr: float,
    seed: int,
    advance: Advance,
) -> dict:
    """Recall and false-positive rate per record and per type, each fold judged by a verdict fitted without it."""
    n = len(scores)
    flags: dict[str, np.ndarray] = {}
    fused: dict[str, np.ndarray] = {}
    for rows in np.array_split(np.random.default_rng(seed + 1).permutation(n), REPORT_FOLDS):
        rest = np.setdiff1d(np.arange(n), rows)
        verdict = StackedVerdict.fit([scores[i] for i in rest], [labels[i] for i in rest], target_fpr, seed)
        for pii_type, probability in verdict.probabilities([scores[i] for i in rows]).items():
            fused.setdefault(pii_type, np.zeros(n))[rows] = probability
            flags.setdefault(pii_type, np.zeros(n, dtype=bool))[rows] = probability >= verdict.cutoffs[pii_type]
        advance(1)
    any_flag = np.any(np.stack(list(flags.values())), axis=0) if flags else np.zeros(n, dtype=bool)
    has_pii = np.array([bool(label) for label in labels])
    per_type = {}
    for pii_type in sorted({t.value for label in labels for t in label} | set(flags)):
        truth = np.array([pii_type in label for label in labels])  # a user's CUSTOM:NAME too
        hit = flags.get(pii_type, np.zeros(n, dtype=bool))
        auc = None
        if pii_type in fused and 0 < truth.sum() < n:
            from sklearn.metrics import roc_auc_score

            auc = round(float(roc_auc_score(truth, fused[pii_type])), 4)
        per_type[pii_type] = TypeQuality(
            positives=int(truth.sum()), recall=_rate(hit[truth]), false_positive_rate=_rate(hit[~truth]), auc=auc
        )
    return {
        "held_out_recall": _rate(any_flag[has_pii]),
        "held_out_false_positive_rate": _rate(any_flag[~has_pii]),
        "per_type": per_type,
    }


def _rate(flags: np.ndarray) -> float | None:
    return round(float(flags.mean()), 4) if len(flags) else None


def has_saved_calibration(directory: Path) -> bool:
    return (directory / _CALIBRATION_FILE).is_file()


def save_calibration(
    calibrated: Calibrated,
    directory: Path,
    embedder_fingerprint: str,
    embedder_probes: Sequence[Sequence[float]] | None = None,
) -> None:
    """Keep the store-fitted probe, alignment and verdict for other collections made with the same embedder."""
    private_dir(directory)
    for attack in calibrated.attacks:
        if isinstance(attack, StoreProbe):
            attack.save(directory / "probe")
        elif isinstance(attack, AlignedAttack):
            attack.save(directory / "alignment")
    payload = {
        "embedder": embedder_fingerprint,
        "embedder_probes": None if embedder_probes is None else [list(row) for row in embedder_probes],
        "verdict": calibrated.verdict.to_json(),
        "report": calibrated.report.model_dump(mode="json"),
    }
    (directory / _CALIBRATION_FILE).write_text(json.dumps(payload, indent=2))


def fitted_for(
    payload: dict[str, Any], embedder_fingerprint: str, embedder_probes: Sequence[Sequence[float]] | None
) -> bool:
    """Whether a saved calibration was made for this embedder: the same fingerprint, or the same probe embeddings
    up to float noise (a fingerprint can differ between CPUs, as it did for the packaged generative model)."""
    if payload["embedder"] == embedder_fingerprint:
        return True
    saved = payload.get("embedder_probes")
    return saved is not None and embedder_probes is not None and same_probe_embeddings(saved, embedder_probes)


def load_calibration(
    directory: Path,
    attacks: Sequence[Attack],
    embedder_fingerprint: str,
    embedder_probes: Sequence[Sequence[float]] | None = None,
) -> Calibrated:
    path = directory / _CALIBRATION_FILE
    if not path.is_file():
        raise VdbguardError(f"{directory} holds no saved calibration", "save one with --save-calibration DIR")
    payload = json.loads(path.read_text())
    if not fitted_for(payload, embedder_fingerprint, embedder_probes):
        raise VdbguardError(
            f"the calibration in {directory} was fitted for another embedder",
            "calibrate again on a collection made with this embedder",
        )
    report = OwnerCalibration.model_validate({**payload["report"], "loaded_from": str(directory)})
    others = [a for a in attacks if a.name != PiiProbeAttack.name]
    if report.aligned_to is not None:
        mapping = load_mapping(directory / "alignment")
        others = [AlignedAttack(attack, mapping) for attack in others]
    probe = StoreProbe.load(directory / "probe")
    return Calibrated([probe, *others], StackedVerdict.from_json(payload["verdict"]), report)


def owner_calibration(
    connector: Connector,
    attacks: Sequence[Attack],
    detector: Detector,
    dimension: int | None,
    embedder_fingerprint: str,
    options: CalibrationOptions,
    *,
    batch_size: int = 256,
    progress: ProgressSink | None = None,
    align_to: Embedder | None = None,
    embedder_probes: Sequence[Sequence[float]] | None = None,
    records_in_store: int | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> Calibrated | Uncalibrated:
    """The calibration the options ask for: reused or fitted on this store; or why there is none (``off``, ``auto``
    on a store that keeps too little text, a sample with too few records with PII to fit a probe: a clean store, or
    one redacted well, is judged by the packaged verdict, never failed for it). ``embedder_probes``: the embedder's
    probe embeddings, where it is a model that runs here, so a calibration saved on another machine is recognised
    despite float noise."""
    if options.load_from is not None:
        return load_calibration(options.load_from, attacks, embedder_fingerprint, embedder_probes)
    if options.mode == "off":
        return Uncalibrated("owner-side calibration is off")
    sample = labelled_sample(
        connector, detector, dimension, options.sample, batch_size, progress, records_in_store, _preloading(meanwhile)
    )
    detected = sample.detections_by_text()
    if options.mode == "auto" and len(sample.records) < MIN_RECORDS:
        reason = f"the store keeps text for {len(sample.records)} records; owner-side calibration needs {MIN_RECORDS}"
        log.info("owner-side calibration skipped: %s", reason)
        return Uncalibrated(reason, detected=detected)
    steps = PROBE_FOLDS + REPORT_FOLDS + 1
    try:
        with (
            one_blas_thread(),
            (progress or Silent()).task("Calibrating: fitting on the store's labels", steps) as advance,
        ):
            calibrated = calibrate_on_store(
                sample, attacks, detector, dimension, target_fpr=options.target_fpr, align_to=align_to, step=advance
            )
    except TooFewPositives as exc:
        log.warning("%s; the packaged verdict judges this scan instead", exc.message)
        aligned = None if align_to is None else aligned_attacks(sample, attacks, dimension, align_to)
        return Uncalibrated(exc.message, aligned, detected)
    if options.save_to is not None:
        save_calibration(calibrated, options.save_to, embedder_fingerprint, embedder_probes)
    return calibrated


def wait_for_preloads() -> None:
    """Join what calibration loads meanwhile, once the scan is done with it: a process that exits while that thread
    still loads torch's native code aborts ("terminate called without an active exception", exit -6), and one that
    joined it at calibration's end would wait for a model the scan may not need yet."""
    while _PRELOADS:
        _PRELOADS.pop().join()


def _preloading(meanwhile: Callable[[], object] | None) -> Callable[[], None]:
    """What fitting on the sample imports, then ``meanwhile``: imported while the sample is labelled, scikit-learn
    no longer holds up the first fold (1.5 s of a cold scan of the demo store)."""

    def load() -> None:
        import sklearn.metrics
        import sklearn.svm  # noqa: F401

        if meanwhile is not None:
            meanwhile()

    return load


def aligned_attacks(
    sample: LabelledSample, attacks: Sequence[Attack], dimension: int | None, align_to: Embedder
) -> list[AlignedAttack]:
    """Every packaged attack on store vectors mapped into ``align_to``'s space, the map fitted on the whole sample's
    text (which needs no PII): a store of a model that cannot run here, too clean to calibrate on."""
    vectors = l2_normalise(np.stack([record.checked_vector(dimension) for record in sample.records]))
    targets = l2_normalise(align_to.encode([record.source_text or "" for record in sample.records]))
    mapping = ridge_map(vectors, targets)
    return [AlignedAttack(attack, mapping) for attack in attacks]
