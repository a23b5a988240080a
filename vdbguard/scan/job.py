"""Run a scan job (``vdbguard scan --config vdbguard.toml``): every store and collection it names, one state.

Each collection gets its own report folder, ``<output.dir>/<store>/<collection>/``. Allow lists and the
severity policy decide findings during the scan (so they are part of the state's verdict key);
suppressions hide accepted findings from the reports until they expire.

A store's ``collections`` are names or shell-style globs (``*``, ``?``, ``[...]``: ``"*"``, ``"tickets_*"``). Globs
are matched against the collections the store lists when the job starts (``Connector.list_collections``), each
collection scanned once, in the order of the patterns and, within a glob, by name; a glob that matches nothing
stops the job before any scan, naming what the store holds. A name without glob characters is taken as written,
so a store that cannot list its collections is still scanned by name.
"""

from __future__ import annotations

import contextlib
import fnmatch
import logging
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from vdbguard.cache import reap_scratch_dirs, writable_dir
from vdbguard.config import JobConfig, StoreSettings, Suppression, is_pattern
from vdbguard.credentials import redact_location
from vdbguard.errors import VdbguardError, stop_if_asked
from vdbguard.progress import ProgressSink
from vdbguard.reports import write_reports
from vdbguard.reports.schema import Report
from vdbguard.reports.store_summary import StoreSummary

if TYPE_CHECKING:
    from vdbguard.detectors.shared import WorkerSlot
    from vdbguard.scan.settings import ScanSettings

Folders = Literal["store", "collection", "none"]
SHOWN_NAMES = 50  # existing collections an error names at most
log = logging.getLogger(__name__)
plan = logging.getLogger("vdbguard.scan.plan")


def match_collections(patterns: Sequence[str], existing: Sequence[str], where: str) -> list[str]:
    """The collections ``patterns`` name, each once, in pattern order (a glob's matches sorted by name); names
    without glob characters are kept as written. A glob that matches none of ``existing`` is an error that lists
    them: a typo must not turn a scan of everything into a scan of nothing."""
    chosen: dict[str, None] = {}
    for pattern in patterns:
        if not is_pattern(pattern):
            chosen.setdefault(pattern)
            continue
        matches = sorted(name for name in existing if fnmatch.fnmatchcase(name, pattern))
        if not matches:
            raise VdbguardError(
                f"no collection of {where} matches {pattern!r}", f"existing collections: {_names(existing)}"
            )
        chosen.update(dict.fromkeys(matches))
    return list(chosen)


def _names(existing: Sequence[str]) -> str:
    if not existing:
        return "none (the store holds no collection)"
    names = sorted(existing)
    shown = ", ".join(names[:SHOWN_NAMES])
    return shown + (f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else "")


@dataclass(frozen=True)
class CollectionResult:
    store: str
    collection: str
    report: Report
    out: Path
    duration_s: float


@dataclass(frozen=True)
class CollectionFailure:
    """A collection whose scan failed: the job goes on with the others and names it at the end (store summary,
    exit code 2)."""

    store: str
    collection: str
    error: VdbguardError
    duration_s: float


@dataclass
class Publisher:
    """Where each collection's counts go: ``metrics_file`` (in a run of several, one file per collection beside
    it, ``<stem>-<store>-<collection>.prom``) and ``webhook``; ``store_summary`` ranks every collection published."""

    metrics_file: Path | None = None
    webhook: str | None = None
    per_collection: bool = False
    store_summary: StoreSummary = field(default_factory=StoreSummary)

    @classmethod
    def for_job(cls, config: JobConfig, webhook: str | None = None, per_collection: bool = True) -> Publisher:
        """The job's textfile, and ``webhook`` (by default the URL its ``output.webhook_env`` names)."""
        if webhook is None and config.output.webhook_env:
            webhook = os.environ.get(config.output.webhook_env)
        return cls(config.resolve(config.output.metrics_file), webhook, per_collection)

    def metrics_path(self, store: str, collection: str) -> Path | None:
        if self.metrics_file is None or not self.per_collection:
            return self.metrics_file
        return self.metrics_file.with_name(f"{self.metrics_file.stem}-{store}-{collection}.prom")

    def publish(self, result: CollectionResult) -> None:
        """A finished collection's counts: the textfile replaced, the webhook posted (a failure there only warns)."""
        from vdbguard.reports.metrics import post_webhook, webhook_payload, write_metrics

        self.store_summary.add(result.report, result.store, result.out)
        path = self.metrics_path(result.store, result.collection)
        if path is not None:
            write_metrics(path, result.report, collection=result.collection, duration_s=result.duration_s)
        if self.webhook:
            post_webhook(self.webhook, webhook_payload(result.report, result.duration_s))

    def failed(self, failure: CollectionFailure) -> None:
        """A failed collection: named in the store summary, and its textfile says so (success 0, its last success
        kept). The scan's own error is the one to show, so a textfile that cannot be written only warns."""
        self.store_summary.add_failure(failure.store, failure.collection, failure.error)
        path = self.metrics_path(failure.store, failure.collection)
        if path is None:
            return
        from vdbguard.reports.metrics import write_metrics

        try:
            write_metrics(path, None, collection=failure.collection, duration_s=failure.duration_s)
        except VdbguardError as exc:
            log.warning("%s", exc)

    def write_summary(self, out: Path) -> list[Path]:
        """store-summary.json and .md, written into ``out``."""
        return self.store_summary.write(out)


def as_error(exc: Exception) -> VdbguardError:
    """A failure as the error a user reads: vdbguard's own as it is, anything else named by its type."""
    if isinstance(exc, VdbguardError):
        return exc
    return VdbguardError(f"{type(exc).__name__}: {exc}", "re-run with -v; if it persists, report it with this message")


def run_job(
    config: JobConfig,
    progress: ProgressSink | None = None,
    today: date | None = None,
    publisher: Publisher | None = None,
    folders: Folders = "store",
) -> Iterator[CollectionResult | CollectionFailure]:
    """Scan every collection of the job in turn, yielding each one's report once it is written and published, or
    its failure: one collection's error never stops the others (a Ctrl-C does).

    Suppressions that expired before ``today`` no longer apply (``config.expired_suppressions`` lists them).
    ``publisher`` (by default the job's own, ``Publisher.for_job``) hears of every collection as it finishes, and
    ranks them in its store summary.
    ``folders``: where each collection's reports go in ``output.dir``: ``store/collection/`` (a job file's),
    ``collection/`` (`scan --collection PATTERN`, which names one store), or ``none``, ``output.dir`` itself (`scan`
    of one collection by name).
    """
    from vdbguard.detectors.shared import WorkerSlot
    from vdbguard.scan.settings import ScanSettings

    reap_scratch_dirs()  # a killed run's private copies, even when this run carries every record over and copies none
    today = today or date.today()
    publisher = publisher or Publisher.for_job(config, per_collection=folders != "none")
    suppressions = config.active_suppressions(today)
    scan_settings = ScanSettings.from_job(config)
    job = config.job
    plan = [(store, _collections_of(config, store)) for store in config.stores]
    _check_output_folders(config, plan, folders)
    if job.state is not None:
        writable_dir(config.resolve(job.state).parent, "the job.state folder")
    with contextlib.closing(WorkerSlot()) as detector_workers:  # one early PII detector for every collection
        for store, collections in plan:
            for collection in collections:
                started = time.monotonic()
                try:
                    report, out = _scan_one(
                        config,
                        store,
                        collection,
                        scan_settings,
                        suppressions,
                        progress,
                        detector_workers,
                        folders,
                    )
                except Exception as exc:
                    stop_if_asked()  # a stop signal ends the job, whatever a library made of its SystemExit
                    log.debug("scan of %s/%s failed", store.label, collection, exc_info=True)
                    error = _resumable(as_error(exc), config.resolve(job.state))
                    failure = CollectionFailure(store.label, collection, error, time.monotonic() - started)
                    publisher.failed(failure)
                    yield failure
                    continue
                result = CollectionResult(store.label, collection, report, out, time.monotonic() - started)
                publisher.publish(result)
                yield result


def _resumable(error: VdbguardError, state: Path | None) -> VdbguardError:
    """The error of a scan with a state that failed after committing records, its hint saying that it resumes."""
    if state is not None and error.resumable:
        resume = f"what was scanned is kept in {state}: run the same command again to resume"
        error.hint = f"{error.hint}; then {resume}" if error.hint else resume
    return error


def _scan_one(
    config: JobConfig,
    store: StoreSettings,
    collection: str,
    scan_settings: ScanSettings,
    suppressions: list[Suppression],
    progress: ProgressSink | None,
    detector_workers: WorkerSlot,
    folders: Folders,
) -> tuple[Report, Path]:
    """One collection of the job scanned, its suppressions applied and its reports written."""
    from vdbguard.scan.distributed import RayExecutor
    from vdbguard.scan.run import AUTO_EMBEDDER, resolve_embedder, scan_collection
    from vdbguard.scan.settings import ScanTarget

    job = config.job
    with store.open(collection, config.base_dir) as connector:
        model = resolve_embedder(connector, job.embedder)
        if model is not None and job.embedder == AUTO_EMBEDDER:
            plan.info("Identified the embedder from the stored vectors: %s", model.name)
        executor = RayExecutor(job.workers, job.ray_address) if job.executor == "ray" else None
        report = scan_collection(
            connector,
            ScanTarget.of_store(config, store),
            scan_settings,
            embedder=model,
            progress=progress,
            executor=executor,
            detector_workers=detector_workers,
            suppressions=suppressions,
        )
    out = _output_dir(config, store, collection, folders)
    write_reports(report, out, config.output.formats)
    return report, out


def _collections_of(config: JobConfig, store: StoreSettings) -> list[str]:
    """The store's collections to scan: its names, and what its globs match among the collections it lists now."""
    existing: list[str] = []
    if any(map(is_pattern, store.collections)):
        existing = store.list_collections(config.base_dir)
    location = redact_location(str(config.resolve(store.path) or store.url))
    return match_collections(store.collections, existing, f"the {store.label} store at {location}")


def _check_output_folders(config: JobConfig, plan: list[tuple[StoreSettings, list[str]]], folders: Folders) -> None:
    """Every report folder writable before the first scan, and each collection's its own: two names that differ
    only in characters a folder name cannot hold ("a b", "a_b") would overwrite each other's reports."""
    owners: dict[Path, str] = {}
    for store, collections in plan:
        for collection in collections:
            out, name = _output_dir(config, store, collection, folders), f"{store.label}/{collection}"
            if out in owners:
                raise VdbguardError(
                    f"collections {owners[out]!r} and {name!r} would write their reports to one folder, {out}",
                    "scan one of them in a run of its own, with another output folder",
                )
            owners[out] = name
            writable_dir(out, "output.dir")


def _output_dir(config: JobConfig, store: StoreSettings, collection: str, folders: Folders) -> Path:
    base = config.resolve(config.output.dir)
    assert base is not None
    if folders == "none":
        return base
    return base / _safe(store.label) / _safe(collection) if folders == "store" else base / _safe(collection)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip(".") or "_"
