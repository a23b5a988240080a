"""One call from connector to Report: what the CLI, scheduled jobs and the demo all use."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from vdbguard.attacks import DEFAULT_ATTACKS, load_attack_class
from vdbguard.attacks.base import with_record_budget
from vdbguard.attacks.training import PROFILES, TrainingProfile, model_folders, trained_attacks, training_digest
from vdbguard.config import Suppression
from vdbguard.connectors.base import CollectionInfo, Connector
from vdbguard.credentials import redact_location
from vdbguard.detectors import DEFAULT_DETECTOR, detector_identity, load_detector
from vdbguard.detectors.shared import DetectorWorker, WorkerSlot, detector_cores, worth_a_detector_worker
from vdbguard.embedders import Embedder
from vdbguard.errors import RecordError, VdbguardError
from vdbguard.progress import ProgressSink
from vdbguard.reports.schema import AttackInfo, EmbedderInfo, OwnerCalibration, Report, Target, VerdictInfo
from vdbguard.scan.engine import DeepTier, Executor, Scanner, scan_incrementally
from vdbguard.scan.fused import packaged_verdict
from vdbguard.scan.owner import (
    DEFAULT_TARGET_FPR,
    Calibrated,
    CalibrationOptions,
    StoreProbe,
    has_saved_calibration,
    owner_calibration,
    wait_for_preloads,
)
from vdbguard.scan.quality import quality_for
from vdbguard.scan.settings import ScanSettings, ScanTarget
from vdbguard.scan.state import ScanStore, target_key, verdict_key
from vdbguard.scan.suppressions import apply_suppressions

_EMPTY_POLICY = {"allow": {"values": [], "patterns": [], "records": []}, "severity": {}}
AUTO_EMBEDDER = "auto"
STORE_EMBEDDER = "store"


def resolve_embedder(connector: Connector, name_or_path: str, sample_size: int = 64) -> Embedder | None:
    """The embedder named; for ``auto`` the known model that best explains a sample of stored vectors;
    for ``store`` None: the store's own model cannot run here, and the scan learns from its records.

    The scan picks its attack models by embedder, so a wrong guess would mean wrong attacks: ``auto``
    fails with every candidate's score rather than guess.
    """
    if name_or_path == STORE_EMBEDDER:
        return None
    if name_or_path != AUTO_EMBEDDER:
        return Embedder(name_or_path)
    from vdbguard.embedders.identify import identify_embedder

    sample: list[np.ndarray] = []
    for batch in connector.iter_batches(batch_size=sample_size):
        for record in batch.records:
            with contextlib.suppress(RecordError):  # the scan itself reports bad records
                sample.append(record.checked_vector())
        if len(sample) >= sample_size:
            break
    if not sample:
        raise VdbguardError("--embedder auto needs stored vectors to look at, and the collection has none")
    dimensions = {vector.size for vector in sample}
    if len(dimensions) > 1:
        raise VdbguardError(
            f"stored vectors have mixed dimensions {sorted(dimensions)}", "pass --embedder NAME_OR_PATH"
        )
    return Embedder(identify_embedder(np.stack(sample)))


def scan_collection(
    connector: Connector,
    target: ScanTarget,
    settings: ScanSettings,
    *,
    embedder: Embedder | None,
    progress: ProgressSink | None = None,
    executor: Executor | None = None,
    detector_workers: WorkerSlot | None = None,
    suppressions: Sequence[Suppression] = (),
) -> Report:
    """Scan every record of the collection at ``target`` as ``settings`` say (``ScanSettings()``: the defaults)
    and return the report.

    With calibration (default ``auto``) and a store that keeps its text, the probes and a verdict over every
    attack are first fitted on the store's own labelled records (see ``scan.owner``). ``embedder=None`` is a
    store made by a model that cannot run here: calibration is then required, and the packaged attacks run on the
    store's vectors mapped into the default model's space.

    ``executor``: where the fast tier attacks (``scan.distributed.RayExecutor``: a Ray cluster); in this process
    by default. A scan that reads pages loads its PII detector in a worker process meanwhile, on another core: the
    one in ``detector_workers`` (a job's, kept for its next scan; the caller stops it), or one it starts and stops.
    ``suppressions``: accepted findings, hidden from the report (and from the one the state keeps).

    The state is opened once, where the scan first needs it, and held (with its lock) until the report is saved.
    """
    state = _StateOnce(settings.state_path)
    try:
        report = _scan(connector, target, settings, state, embedder, progress, executor, detector_workers)
        report, open_types = apply_suppressions(report, suppressions)
        if settings.state_path is not None:
            state().save_report(report, open_types)
    finally:
        state.close()
        wait_for_preloads()
    return report


class _StateOnce:
    """The scan's state, opened at its first use and then held: after the store's snapshot where the state is new
    (a disk too full for the snapshot is named as such), before it where the state may know this content."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._store: ScanStore | None = None

    def __call__(self) -> ScanStore:
        if self._store is None:
            self._store = ScanStore(self.path)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def _scan(
    connector: Connector,
    target: ScanTarget,
    settings: ScanSettings,
    state: _StateOnce,
    embedder: Embedder | None,
    progress: ProgressSink | None,
    executor: Executor | None,
    detector_workers: WorkerSlot | None,
) -> Report:
    connector_name, safe_location = target.connector_name, redact_location(target.location)
    detector_key = detector_identity(settings.detector, settings.detector_settings)
    seen = _seen_before(connector, connector_name, safe_location, state)
    slot = detector_workers or WorkerSlot()
    reads_here = seen is None and executor is None
    early = (
        slot.worker(settings.detector, settings.detector_settings)
        if reads_here and worth_a_detector_worker(settings.detector)
        else None
    )
    info = seen or connector.describe()
    if embedder is None and settings.calibration.mode == "off" and settings.calibration.load_from is None:
        raise VdbguardError(
            "--embedder store learns the store's space from its own records: it needs owner-side calibration",
            "drop --owner-calibration off",
        )
    state_target = target_key(connector_name, safe_location, info.name)
    if target.former_location is not None and settings.state_path is not None:
        former = target_key(connector_name, target.former_location, info.name)
        _adopt_target(state(), settings.state_path, former, state_target, detector_key)
    calibration, persisted = _calibration_in_state(
        settings.calibration if embedder else replace(settings.calibration, mode="on"),
        settings.state_path,
        state_target,
        detector_key,
    )
    training = PROFILES[settings.profile] if isinstance(settings.profile, str) else settings.profile
    verdict_settings = {
        "vdbguard": version("vdbguard"),
        "embedder": STORE_EMBEDDER if embedder is None else [embedder.name, embedder.files_digest],
        "dimension": info.dimension,
        "attacks": [
            (name, load_attack_class(name, (embedder or Embedder()).name).version) for name in settings.attack_names
        ],
        "profile": asdict(training),
        "detector": detector_key,
        "calibration": [calibration.mode, calibration.sample, calibration.target_fpr]
        + ([] if persisted else [str(calibration.load_from)]),
        "fused": settings.fused,
        "masked": settings.mask_pii,
        "policy": None if settings.policy is None else settings.policy.settings(),
        "deep": [list(settings.deep_attack_names), settings.deep_budget[0], settings.deep_record_seconds],
        "kinds": sorted(settings.finding_kinds),
    }
    key = verdict_key(verdict_settings)
    if settings.policy is None and settings.state_path is not None:  # jobs once keyed their empty policy as such
        state().adopt_key(state_target, verdict_key({**verdict_settings, "policy": _EMPTY_POLICY}), key)
    built: BuiltScanner | None = None

    def build() -> Scanner:
        """Load or train the attacks, calibrate, and make the scanner: only once a record needs attacking."""
        nonlocal built
        built = _build_scanner(
            connector,
            info.dimension,
            embedder,
            replace(settings, calibration=calibration),
            training,
            progress,
            detector_processes=1 if executor is not None else detector_cores(),
            early_detector=early,
            records_in_store=info.count,
        )
        return built.scanner

    deep = None
    if settings.deep_attack_names:

        def build_deep() -> Scanner:
            model = embedder or Embedder()
            deep_attacks = trained_attacks(model, settings.deep_attack_names, profile=training, progress=progress)
            for attack in deep_attacks:
                with_record_budget(attack, settings.deep_record_seconds)
            dimension = info.dimension if embedder is None else embedder.dimension
            pii_detector = load_detector(settings.detector, settings=settings.detector_settings)
            return Scanner(
                deep_attacks,
                pii_detector,
                dimension,
                mask_pii=settings.mask_pii,
                policy=settings.policy,
                source_embedder=embedder,
            )

        deep = DeepTier(build_deep, *settings.deep_budget, attack_names=list(settings.deep_attack_names))
    common: dict[str, Any] = {
        "batch_size": settings.batch_size,
        "store": state(),
        "target": state_target,
        "total": info.count,
        "progress": progress,
        "sample": settings.sample,
    }
    result = scan_incrementally(connector, build, key, deep=deep, executor=executor, **common)
    if detector_workers is None:
        slot.close()  # the scan is done detecting; a scanner built from here on detects in this process
    previous = state().latest_report(state_target) if built is None and settings.state_path is not None else None
    if previous is not None and previous.coverage is not None:  # nothing attacked: same settings, same models
        identity, attack_info = previous.embedder, previous.attacks
        calibration_report, quality = previous.calibration, previous.expected_quality
        unmeasured, judged_by = previous.quality_not_measured, previous.verdict
    else:
        if built is None:
            build()
        assert built is not None
        identity, calibration_report, judged_by = built.identity, built.calibration, built.verdict
        deep_attacks = deep.deep_scanner().attacks if deep is not None else []
        attack_info = [
            AttackInfo(name=a.name, description=a.description, threshold=a.threshold, metrics=a.metrics())
            for a in (*built.scanner.attacks, *deep_attacks)
        ]
        mode = "default" if settings.fused else "any"
        if calibration_report is not None:
            mode = "store" if embedder is None else "owner"
        quality, unmeasured = quality_for(mode, "store" if embedder is None else embedder.name)
    report = Report(
        tool_version=version("vdbguard"),
        created_at=datetime.now(UTC),
        target=Target(
            connector=connector_name,
            collection=info.name,
            location=safe_location,
            dimension=info.dimension,
            count=info.count,
            metric=info.metric,
        ),
        embedder=identity,
        detector=" ".join(map(str, detector_key[:2])),
        attacks=attack_info,
        masked=settings.mask_pii,
        summary=result.summary,
        findings=result.findings if isinstance(result.findings, list) else [],
        record_problems=result.problems,
        coverage=result.coverage,
        history=result.history,
        calibration=calibration_report,
        verdict=judged_by,
        expected_quality=quality,
        quality_not_measured=unmeasured,
    )
    if not isinstance(result.findings, list):
        report = report.spooled(result.findings)
    return report


def _seen_before(connector: Connector, connector_name: str, location: str, state: _StateOnce) -> CollectionInfo | None:
    """The collection as the last report of this very content described it, when the store names its content
    version and the state holds such a report (a re-scan that most likely reads nothing); else None. Describing
    an embedded Chroma store copies it, which an unchanged re-scan would do only for this."""
    content = connector.content_version()
    if content is not None and state.path is not None and state.path.is_file():
        report = state().report_of_content(content)
        if report is not None and (report.target.connector, report.target.location) == (connector_name, location):
            seen = report.target
            return CollectionInfo(name=seen.collection, dimension=seen.dimension, count=seen.count, metric=seen.metric)
    return None


def _calibration_in_state(
    calibration: CalibrationOptions, state_path: Path | None, target: str, detector_key: list[str | int]
) -> tuple[CalibrationOptions, bool]:
    """With a state file, an owner-side calibration is kept beside it and reused, so verdicts stay comparable
    across runs and carried-over records were judged by the same fit as new ones. It is fitted on the
    detector's labels, so another detector version fits it anew, as does another kind of store probe (a job's state
    from before the kernel probe would not load)."""
    if state_path is None or calibration.mode == "off" or calibration.load_from or calibration.save_to:
        return calibration, False
    folder = _calibration_folder(state_path, target, detector_key)
    if has_saved_calibration(folder):
        return replace(calibration, load_from=folder), True
    return replace(calibration, save_to=folder), True


def _calibration_folder(state_path: Path, target: str, detector_key: list[str | int]) -> Path:
    keyed = json.dumps([target, detector_key, StoreProbe.version])
    return state_path.with_name(state_path.name + ".calibration") / hashlib.sha256(keyed.encode()).hexdigest()[:12]


def _adopt_target(state: ScanStore, state_path: Path, former: str, target: str, detector_key: list[str | int]) -> None:
    """A state that keyed this store by the path as written keeps its runs, verdicts and calibration under the
    absolute path. Records are matched by their digests as ever, so whatever differs is attacked again."""
    if state.adopt_target(former, target):
        old, new = (_calibration_folder(state_path, key, detector_key) for key in (former, target))
        if old.is_dir() and not new.exists():
            old.rename(new)


@dataclass(frozen=True)
class BuiltScanner:
    """The scanner and what the report says of how it was made."""

    scanner: Scanner
    identity: EmbedderInfo
    calibration: OwnerCalibration | None
    verdict: VerdictInfo


def _build_scanner(
    connector: Connector,
    store_dimension: int | None,
    embedder: Embedder | None,
    settings: ScanSettings,
    training: TrainingProfile,
    progress: ProgressSink | None,
    detector_processes: int = 1,
    early_detector: DetectorWorker | None = None,
    records_in_store: int | None = None,
) -> BuiltScanner:
    model = embedder or Embedder()  # for a store's own space: the packaged model its vectors are mapped into
    if embedder is None:
        dimension = store_dimension
        identity = EmbedderInfo(name=STORE_EMBEDDER, fingerprint=f"{STORE_EMBEDDER}-{dimension}", dimension=dimension)
    elif store_dimension is not None and store_dimension != embedder.dimension:
        raise VdbguardError(
            f"the collection stores {store_dimension}-d vectors but embedder {embedder.name!r} "
            f"produces {embedder.dimension}-d ones",
            "pass --embedder with the model that produced this collection, or --embedder store",
        )
    else:
        dimension = embedder.dimension
        identity = EmbedderInfo(name=embedder.name, fingerprint=embedder.fingerprint, dimension=dimension)
    attacks = trained_attacks(model, settings.attack_names, profile=training, progress=progress)
    pii_detector = load_detector(settings.detector, detector_processes, early_detector, settings.detector_settings)
    calibrated = owner_calibration(
        connector,
        attacks,
        pii_detector,
        dimension,
        identity.fingerprint,
        settings.calibration,
        batch_size=settings.batch_size,
        progress=progress,
        align_to=None if embedder else model,
        embedder_probes=None if embedder is None else embedder.probe_embeddings,
        records_in_store=records_in_store,
        meanwhile=None if embedder is None else lambda: embedder.encoder,  # the scan re-embeds flagged stored text
    )
    verdict = None
    if isinstance(calibrated, Calibrated):
        attacks, verdict = calibrated.attacks, calibrated.verdict
        c = calibrated.report
        source = f"reused from {c.loaded_from}" if c.loaded_from else f"fitted on {c.records_labelled} records"
        judged_by = VerdictInfo(name="owner", reason=f"owner-side calibration {source} of this store")
    else:
        judged_by = VerdictInfo(name="any", reason=f"--verdict any; {calibrated.reason}")
        if settings.fused:
            verdict = packaged_verdict(
                attacks,
                pii_detector,
                model,
                settings.calibration.target_fpr,
                training_digest=training_digest(training),
                records=training.verdict_records,
                progress=progress,
            )
            judged_by = VerdictInfo(name="packaged", reason=calibrated.reason)
        if calibrated.aligned is not None:
            attacks = list(calibrated.aligned)
            verdict = verdict and verdict.renamed({a.inner.name: a.name for a in calibrated.aligned})
    scanner = Scanner(
        attacks,
        pii_detector,
        dimension,
        mask_pii=settings.mask_pii,
        verdict=verdict,
        policy=settings.policy,
        source_embedder=embedder,
        finding_kinds=settings.finding_kinds,
        detected=calibrated.detected,
    )
    report = calibrated.report if isinstance(calibrated, Calibrated) else None
    return BuiltScanner(scanner, identity, report, judged_by)


def warm_up(
    embedder: Embedder,
    attack_names: Sequence[str] = DEFAULT_ATTACKS,
    profile: str = "default",
    target_fpr: float = DEFAULT_TARGET_FPR,
    progress: ProgressSink | None = None,
) -> list[Path]:
    """Train (or find) what a scan with these settings would train, so a scheduled job's first run trains
    nothing; the folders its models now live in."""
    settings = PROFILES[profile]
    attacks = trained_attacks(embedder, attack_names, profile=settings, progress=progress)
    packaged_verdict(
        attacks,
        load_detector(DEFAULT_DETECTOR),
        embedder,
        target_fpr,
        training_digest=training_digest(settings),
        records=settings.verdict_records,
        progress=progress,
    )
    return [folder for folder in model_folders(embedder) if folder.exists()]
