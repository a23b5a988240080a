"""Run a scan job (``vdbguard scan --config vdbguard.toml``): every store and collection it names, one state.

Each collection gets its own report folder, ``<output.dir>/<store>/<collection>/``. Allow lists and the
severity policy decide findings during the scan (so they are part of the state's verdict key);
suppressions hide accepted findings from the reports until they expire.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from vdbguard.cache import writable_dir
from vdbguard.config import AllowList, JobConfig, StoreSettings, Suppression
from vdbguard.credentials import scrub
from vdbguard.errors import VdbguardError
from vdbguard.pii import PiiType
from vdbguard.progress import ProgressSink
from vdbguard.reports import write_reports
from vdbguard.reports.schema import Finding, Report, Severity
from vdbguard.reports.spool import FindingSpool
from vdbguard.scan.state import ScanStore, restrict


@dataclass(frozen=True)
class ConfigPolicy:
    """The job's allow list and severity policy, as the scanner asks for them."""

    allow: AllowList
    severity_by_type: Mapping[PiiType, Severity]

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
class CollectionResult:
    store: str
    collection: str
    report: Report
    out: Path
    duration_s: float


def apply_suppressions(report: Report, suppressions: list[Suppression]) -> tuple[Report, dict[str, list[str]]]:
    """The report without the PII types accepted for each record (a finding left with none is dropped), and
    record id -> the types left open, for every finding a suppression touched."""
    open_types: dict[str, list[str]] = {}
    for finding in report.iter_findings():
        still_open = [
            t
            for t in finding.pii_types
            if not any(s.matches(finding.collection, finding.record_id, t) for s in suppressions)
        ]
        if len(still_open) != len(finding.pii_types):
            open_types[finding.record_id] = still_open
    if not open_types:
        return report, open_types
    kept: list[Finding] | FindingSpool = [] if report.findings or not report.finding_count else FindingSpool()
    severities: Counter[str] = Counter()
    types: Counter[str] = Counter()
    for finding in report.iter_findings():
        restricted = restrict(finding, open_types)
        if restricted is not None:
            kept.append(restricted)
            severities[restricted.severity.value] += 1
            types.update(restricted.pii_types)
    summary = report.summary.model_copy(
        update={"records_flagged": len(kept), "by_severity": dict(severities), "by_pii_type": dict(types)}
    )
    coverage = report.coverage and report.coverage.model_copy(update={"findings_suppressed": len(open_types)})
    update = {"summary": summary, "coverage": coverage}
    if isinstance(kept, list):
        return report.model_copy(update={**update, "findings": kept}), open_types
    return report.model_copy(update=update).spooled(kept), open_types


def run_job(
    config: JobConfig,
    progress: ProgressSink | None = None,
    today: date | None = None,
    on_failure: Callable[[str, str, float], None] | None = None,
) -> Iterator[CollectionResult]:
    """Scan every collection of the job in turn, yielding each one's report once it is written.

    Suppressions that expired before ``today`` no longer apply (``config.expired_suppressions`` lists them).
    ``on_failure(store, collection, seconds)`` hears of the collection whose scan failed, before the error.
    """
    from vdbguard.connectors import load_connector
    from vdbguard.detectors.shared import WorkerSlot
    from vdbguard.embedders import DEFAULT_EMBEDDER
    from vdbguard.scan.distributed import RayExecutor
    from vdbguard.scan.owner import CalibrationOptions
    from vdbguard.scan.run import resolve_embedder, scan_collection

    today = today or date.today()
    suppressions = config.active_suppressions(today)
    policy = ConfigPolicy(config.allow, config.severity.by_type)
    job, attacks = config.job, config.attacks
    for store in config.stores:
        for collection in store.collections:
            writable_dir(_output_dir(config, store, collection), "output.dir")
    if job.state is not None:
        writable_dir(config.resolve(job.state).parent, "the job.state folder")
    with contextlib.closing(WorkerSlot()) as detector_workers:  # one early PII detector for every collection
        for store in config.stores:
            connector_cls = load_connector(store.connector)
            for collection in store.collections:
                started = time.monotonic()
                with _failure_reported(on_failure, store.label, collection, started):
                    settings = store.connector_settings(collection, config.base_dir)
                    try:
                        connector = connector_cls(**settings)
                    except TypeError as exc:
                        raise VdbguardError(
                            f"store {store.label!r}: the {store.connector} connector rejected its settings: "
                            f"{scrub(str(exc), _secrets(store))}",
                            "check [stores.options] against the connector's settings",
                        ) from exc
                    with connector:
                        model = resolve_embedder(connector, job.embedder or DEFAULT_EMBEDDER)
                        calibration = CalibrationOptions(job.owner_calibration, job.calibration_sample, job.target_fpr)
                        executor = None
                        if job.executor == "ray":
                            opener = functools.partial(connector_cls, **settings)
                            executor = RayExecutor(opener, job.workers, job.ray_address)
                        report = scan_collection(
                            connector,
                            connector_name=store.connector,
                            location=str(config.resolve(store.path) or store.url),
                            embedder=model,
                            attack_names=attacks.fast,
                            profile=job.profile,
                            batch_size=job.batch_size,
                            state_path=config.resolve(job.state),
                            mask_pii=not config.output.show_pii,
                            calibration=calibration,
                            fused=job.verdict == "fused",
                            progress=progress,
                            sample=attacks.sample,
                            deep_attack_names=attacks.deep,
                            deep_budget=(attacks.deep_sample, attacks.deep_max_records, attacks.deep_max_seconds),
                            deep_record_seconds=attacks.deep_record_seconds,
                            policy=policy,
                            executor=executor,
                            detector_workers=detector_workers,
                        )
                    report, open_types = apply_suppressions(report, suppressions)
                    if job.state is not None and open_types:
                        with ScanStore(config.resolve(job.state)) as state:
                            state.save_report(report, open_types)
                    out = _output_dir(config, store, collection)
                    write_reports(report, out, config.output.formats)
                yield CollectionResult(store.label, collection, report, out, time.monotonic() - started)


@contextlib.contextmanager
def _failure_reported(
    on_failure: Callable[[str, str, float], None] | None, store: str, collection: str, started: float
) -> Iterator[None]:
    try:
        yield
    except BaseException:
        if on_failure is not None:
            on_failure(store, collection, time.monotonic() - started)
        raise


def _output_dir(config: JobConfig, store: StoreSettings, collection: str) -> Path:
    base = config.resolve(config.output.dir)
    assert base is not None
    return base / _safe(store.label) / _safe(collection)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip(".") or "_"


def _secrets(store: StoreSettings) -> list[str | None]:
    return [os.environ.get(variable) for variable in store.credentials.values()]
