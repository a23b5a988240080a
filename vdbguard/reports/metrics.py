"""Scan counts for monitoring: a Prometheus textfile and a webhook.

Counts only: never a recovered value, a record's text or a store's address, so either may go anywhere.
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
import os
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from vdbguard.cache import atomic_write
from vdbguard.credentials import redact_userinfo, scrub
from vdbguard.errors import VdbguardError
from vdbguard.reports.schema import Report, Severity

log = logging.getLogger(__name__)

PREFIX = "vdbguard_"
_LAST_SUCCESS = f"{PREFIX}last_success_timestamp_seconds"


class _Families(CollectorRegistry):
    """What ``generate_latest`` renders: families built here, not Gauges (a Gauge writes files under
    ``$PROMETHEUS_MULTIPROC_DIR`` when that is set)."""

    def __init__(self, families: list[GaugeMetricFamily]) -> None:
        super().__init__()
        self.families = families

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield from self.families


def render_metrics(report: Report | None, *, collection: str, duration_s: float, now: float, previous: str = "") -> str:
    """The textfile for one scan. ``report`` None: the scan failed, and the last success is the one in
    ``previous`` (the file this one replaces), so an alert on a stale success keeps working."""
    families: list[GaugeMetricFamily] = []
    base = {"collection": collection}

    def family(name: str, about: str, samples: list[tuple[dict[str, str], float]]) -> None:
        if samples:  # a family with no samples is left out, not written as a bare HELP and TYPE
            gauge = GaugeMetricFamily(PREFIX + name, about, labels=list(samples[0][0]))
            for labels, value in samples:
                gauge.add_metric(list(labels.values()), value)
            families.append(gauge)

    family("scan_success", "1 when the last scan finished, 0 when it failed.", [(base, int(report is not None))])
    family("scan_duration_seconds", "How long the last scan ran.", [(base, round(duration_s, 3))])
    if report is not None:
        s = report.summary
        family("records_scanned", "Records the last successful scan read.", [(base, s.records_scanned)])
        family("records_flagged", "Records an attack flagged as leaking PII.", [(base, s.records_flagged)])
        family("records_skipped", "Records skipped as unusable.", [(base, s.records_skipped)])
        family(
            "findings_by_severity",
            "Flagged records by severity.",
            [({**base, "severity": level.value}, s.by_severity.get(level.value, 0)) for level in Severity],
        )
        family(
            "findings_by_pii_type",
            "Flagged records by PII type.",
            [({**base, "pii_type": kind}, count) for kind, count in sorted(s.by_pii_type.items())],
        )
        last_success: float | None = round(now, 3)
    else:  # this collection's last success, from the file this one replaces
        last_success = _last_success(previous, collection)
    if last_success is not None:
        family("last_success_timestamp_seconds", "When a scan last finished (Unix time).", [(base, last_success)])
    return generate_latest(_Families(families)).decode("utf-8")


def _last_success(previous: str, collection: str) -> float | None:
    """``collection``'s last-success sample in ``previous``; None when there is none or the file is not valid."""
    try:
        samples = [sample for family in text_string_to_metric_families(previous) for sample in family.samples]
    except ValueError:
        return None
    found = (s.value for s in samples if s.name == _LAST_SUCCESS and s.labels == {"collection": collection})
    return next(found, None)


def write_metrics(
    path: Path, report: Report | None, *, collection: str, duration_s: float, now: float | None = None
) -> None:
    """Replace ``path`` atomically: the node exporter's textfile collector never reads half a file."""
    try:
        previous = path.read_text(encoding="utf-8") if report is None and path.exists() else ""
        text = render_metrics(
            report,
            collection=collection,
            duration_s=duration_s,
            now=datetime.now(UTC).timestamp() if now is None else now,
            previous=previous,
        )
        with atomic_write(path) as handle:
            handle.write(text.encode("utf-8"))
            os.chmod(handle.name, 0o644)  # a temporary file is private; the collector runs as another user
    except OSError as exc:
        raise VdbguardError(f"cannot write the metrics file {path}: {exc}", "check --metrics-file") from exc


def webhook_payload(report: Report, duration_s: float) -> dict[str, object]:
    """What the webhook gets: the summary's counts and which collection, nothing recovered."""
    s = report.summary
    return {
        "event": "vdbguard.scan",
        "tool_version": report.tool_version,
        "connector": report.target.connector,
        "collection": report.target.collection,
        "records_scanned": s.records_scanned,
        "records_flagged": s.records_flagged,
        "records_skipped": s.records_skipped,
        "by_severity": {level.value: s.by_severity.get(level.value, 0) for level in Severity},
        "by_pii_type": dict(sorted(s.by_pii_type.items())),
        "duration_s": round(duration_s, 3),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def shown_url(url: str) -> str:
    """The webhook as logs may show it: scheme and host only. Webhook paths and queries often are the secret
    (a Slack hook's path is its token), and user:password always is."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{_host_port(url)}/..."


def _host_port(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    try:
        return f"{host}:{parts.port}" if parts.port else host
    except ValueError:  # a port that is not a number
        return host


def check_webhook_url(url: str) -> str:
    """Refuse what urllib would do something else with (file:, ftp:) before the scan runs, not after."""
    parts = urlsplit(url)
    try:
        usable = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port is None or parts.port > 0)
    except ValueError:  # a port that is not a number
        usable = False
    if not usable:
        raise VdbguardError(f"webhook {shown_url(url)} is not an http(s) URL", "e.g. https://hooks.example/scan")
    return url


def post_webhook(url: str, payload: dict[str, object], *, timeout: float = 10.0) -> bool:
    """POST ``payload`` as JSON. A webhook that fails only warns: the scan and its reports are the result.

    ``user:password@`` in the URL becomes a Basic Authorization header that a redirect does not carry on.
    """
    parts = urlsplit(check_webhook_url(url))
    request = urllib.request.Request(
        urlunsplit((parts.scheme, _host_port(url), parts.path or "/", parts.query, "")),
        data=json.dumps(payload).encode("utf-8"),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    if parts.username is not None:
        pair = f"{parts.username}:{parts.password or ''}".encode()
        request.add_unredirected_header("Authorization", "Basic " + base64.b64encode(pair).decode("ascii"))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status = response.status
    except (OSError, http.client.HTTPException, ValueError) as exc:
        reason = scrub(redact_userinfo(str(exc)), [parts.password, parts.path, parts.query], shortest=4)
        log.warning("webhook %s failed, the scan goes on: %s", shown_url(url), reason)
        return False
    log.info("webhook %s answered %s", shown_url(url), status)
    return True
