"""How to scan one collection: what ``scan_collection(connector, target, settings)`` takes.

Its defaults are the job file's (``vdbguard.config.job_default``). A job (a job file's, or the one `vdbguard scan`'s
flags describe) builds it with ``ScanSettings.from_job``, Python callers directly (``ScanSettings(profile="small")``).
What only exists at run time (the embedder, progress, a Ray executor, a job's detector worker) stays an argument of
``scan_collection`` itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vdbguard.attacks import DEFAULT_ATTACKS
from vdbguard.attacks.training import TrainingProfile
from vdbguard.config import AllowList, AttackSettings, JobSettings, job_default
from vdbguard.detectors import DEFAULT_DETECTOR
from vdbguard.identifiers import DetectorSettings
from vdbguard.pii import PiiType
from vdbguard.reports.schema import Severity
from vdbguard.scan.engine import FindingPolicy
from vdbguard.scan.owner import AUTO, CalibrationOptions

if TYPE_CHECKING:
    from vdbguard.config import JobConfig, StoreSettings


@dataclass(frozen=True)
class ConfigPolicy:
    """The job's allow list and severity policy, as the scanner asks for them."""

    allow: AllowList
    severity_by_type: Mapping[PiiType, Severity]

    @classmethod
    def of_job(cls, config: JobConfig) -> ConfigPolicy | None:
        """The job's policy; None where it changes nothing (no allow list, no severity of its own)."""
        if config.allow == AllowList() and not config.severity.by_type:
            return None
        return cls(config.allow, config.severity.by_type)

    def allows_value(self, value: str) -> bool:
        return self.allow.allows_value(value)

    def allows_record(self, record_id: str) -> bool:
        return self.allow.allows_record(record_id)

    def settings(self) -> Any:
        return {
            "allow": self.allow.model_dump(),
            "severity": {t.value: s.value for t, s in sorted(self.severity_by_type.items())},
        }


@dataclass(frozen=True)
class ScanTarget:
    """Where the collection lives, as reports and the state name it: the connector's name and the store's path
    or URL (credentials are masked before either is written anywhere)."""

    connector_name: str
    location: str
    former_location: str | None = None

    @classmethod
    def of_store(cls, config: JobConfig, store: StoreSettings) -> ScanTarget:
        """A job's store: its URL, or its path absolute and normalised (a job file's is relative to the file,
        `scan`'s to the working folder), so that a store is one target whichever way it was named.
        ``former_location``: how a state keyed it before, where that differs."""
        if store.path is None:
            return cls(store.connector, str(store.url))
        location = os.path.normpath(config.base_dir.resolve() / store.path)
        former = str(config.resolve(store.path))
        return cls(store.connector, location, None if former == location else former)


@dataclass(frozen=True)
class ScanSettings:
    """How one collection is scanned.

    ``attack_names``: the fast tier, on every record (or a ``sample`` share of them). ``profile``: the attacks'
    training profile, by name or itself. ``state_path``: the SQLite state that re-scans read, so only new or changed
    records are attacked. ``mask_pii``: recovered values masked in the report. ``calibration``: owner-side
    calibration on the store's own labelled records (``scan.owner``); without it ``fused`` decides each type by the
    stacked verdict fitted on held-out real text (``scan.fused``), and ``fused=False`` flags whatever any attack
    scores over its own threshold. ``deep_attack_names``: the deep tier, on what the fast tier flags plus
    ``deep_budget`` = (share of the rest, records at most, seconds at most), each record given
    ``deep_record_seconds``. ``policy``: allow lists and severities that decide findings during the scan.
    ``finding_kinds``: ``vector`` (what the vectors leak) and ``stored_text`` (PII kept in plain text beside them).
    ``detector_settings``: the user's own identifiers and allow lists.

    Those that change a record's verdict are part of the state's verdict key, so a re-scan with others judges
    every record again; ``batch_size``, ``state_path``, ``sample`` and the deep tier's per-run limits are not.
    """

    attack_names: Sequence[str] = DEFAULT_ATTACKS
    profile: TrainingProfile | str = job_default(JobSettings, "profile")
    batch_size: int = job_default(JobSettings, "batch_size")
    state_path: Path | None = None
    mask_pii: bool = True
    detector: str = DEFAULT_DETECTOR
    calibration: CalibrationOptions = AUTO
    fused: bool = True
    sample: float = job_default(AttackSettings, "sample")
    deep_attack_names: Sequence[str] = ()
    deep_budget: tuple[float, int | None, float | None] = (job_default(AttackSettings, "deep_sample"), None, None)
    deep_record_seconds: float = job_default(AttackSettings, "deep_record_seconds")
    policy: FindingPolicy | None = None
    finding_kinds: Sequence[str] = tuple(job_default(JobSettings, "findings"))
    detector_settings: DetectorSettings | None = None

    @classmethod
    def from_job(cls, config: JobConfig) -> ScanSettings:
        """How a job file scans each of its collections (the same for every store)."""
        job, attacks = config.job, config.attacks
        return cls(
            attack_names=attacks.fast,
            profile=job.profile,
            batch_size=job.batch_size,
            state_path=config.resolve(job.state),
            mask_pii=not config.output.show_pii,
            calibration=CalibrationOptions(
                job.owner_calibration,
                job.calibration_sample,
                job.target_fpr,
                config.resolve(job.save_calibration),
                config.resolve(job.load_calibration),
            ),
            fused=job.verdict == "fused",
            sample=attacks.sample,
            deep_attack_names=attacks.deep,
            deep_budget=(attacks.deep_sample, attacks.deep_max_records, attacks.deep_max_seconds),
            deep_record_seconds=attacks.deep_record_seconds,
            policy=ConfigPolicy.of_job(config),
            finding_kinds=job.findings,
            detector=config.detector.name,
            detector_settings=config.detector_settings(),
        )
