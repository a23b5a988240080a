"""What a finished scan leaves besides its reports, the same for one collection, several, or a job file.

Each collection's counts go to the Prometheus textfile and the webhook as it finishes (a failed one marks the
textfile, keeping the last success), and every collection of a run is ranked in one store summary. A baseline
(``scan --baseline``) is one more suppression: what it accepts leaves the report, and the state's re-render too.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from vdbguard.config import JobConfig, Suppression
from vdbguard.errors import VdbguardError
from vdbguard.reports.schema import Report
from vdbguard.reports.store_summary import StoreSummary
from vdbguard.scan.job import CollectionResult
from vdbguard.scan.state import ScanStore

log = logging.getLogger(__name__)


@dataclass
class Publisher:
    """Where each collection's counts go: ``metrics_file`` (in a run of several, one file per collection beside
    it, ``<stem>-<store>-<collection>.prom``) and ``webhook``; ``store_summary`` ranks every collection published."""

    metrics_file: Path | None = None
    webhook: str | None = None
    per_collection: bool = False
    store_summary: StoreSummary = field(default_factory=StoreSummary)

    @classmethod
    def for_job(cls, config: JobConfig, webhook: str | None, per_collection: bool = True) -> Publisher:
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

    def failed(self, store: str, collection: str, seconds: float) -> None:
        """The failing collection's textfile says so (success 0, its last success kept). The scan's own error is
        the one to show, so a textfile that cannot be written only warns."""
        path = self.metrics_path(store, collection)
        if path is None:
            return
        from vdbguard.reports.metrics import write_metrics

        try:
            write_metrics(path, None, collection=collection, duration_s=seconds)
        except VdbguardError as exc:
            log.warning("%s", exc)

    def write_summary(self, out: Path) -> list[Path]:
        """store-summary.json and .md, written into ``out``."""
        return self.store_summary.write(out)


def baseline_in_force(file: Path | None, today: date) -> tuple[list[Suppression], list[Suppression]]:
    """The baseline's suppressions still in force, and the expired ones (named to the user as a job file's are);
    read before the scan, so that a bad file fails fast."""
    if file is None:
        return [], []
    from vdbguard.baseline import load_baseline

    suppressions = load_baseline(file)
    return [s for s in suppressions if s.expires >= today], [s for s in suppressions if s.expires < today]


def with_baseline(config: JobConfig, baseline: Sequence[Suppression]) -> JobConfig:
    """The job with the baseline's suppressions added to its own."""
    return config.model_copy(update={"suppressions": [*config.suppressions, *baseline]}) if baseline else config


def stored_reports(source: Path, out: Path) -> list[tuple[Report, Path]]:
    """What `vdbguard report SOURCE` re-renders, each report with its folder: a report.json's into ``out``, or
    every collection's last report in a scan state (``out/<connector>-<collection>`` when it holds several)."""
    from vdbguard.reports.loading import is_sqlite, load_report

    if not is_sqlite(source):
        return [(load_report(source), out)]
    with ScanStore(source) as state:
        reports = state.latest_reports()
    if not reports:
        raise VdbguardError(f"{source} holds no finished scan yet", "run the scan with --state to completion")
    if len(reports) == 1:
        return [(reports[0], out)]
    return [(report, out / f"{report.target.connector}-{report.target.collection}") for report in reports]
