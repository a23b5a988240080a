"""The Prometheus textfile and the webhook: valid exposition format, counts only, credentials never shown."""

from __future__ import annotations

import base64
import json
import logging
import re
import stat
from pathlib import Path

import pytest

from tests.helpers import bare_summary, free_port, http_recorder
from tests.reports.test_writers import make_report
from vdbguard.errors import VdbguardError
from vdbguard.reports.metrics import (
    check_webhook_url,
    post_webhook,
    render_metrics,
    webhook_payload,
    write_metrics,
)

_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})? (?P<value>\S+)$")
_LABEL = re.compile(r'(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)="(?P<value>(?:[^"\\\n]|\\[\\"n])*)",?')

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse_exposition(text: str) -> Samples:
    """A strict little reader of the text exposition format: every sample typed first, labels escaped."""
    assert text.endswith("\n")
    typed: dict[str, str] = {}
    samples: Samples = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert name not in typed and kind == "gauge"
            typed[name] = kind
            continue
        if line.startswith("# HELP "):
            continue
        match = _SAMPLE.match(line)
        assert match, line
        labels, position, text_labels = {}, 0, match["labels"] or ""
        for label in _LABEL.finditer(text_labels):
            assert label.start() == position, line
            labels[label["key"]] = re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], label["value"])
            position = label.end()
        assert position == len(text_labels), line
        assert match["name"] in typed and match["name"].startswith("vdbguard_")
        samples[(match["name"], tuple(sorted(labels.items())))] = float(match["value"])
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(f"vdbguard_{name}", tuple(sorted({"collection": "notes", **labels}.items())))]


def test_textfile_has_every_count(tmp_path: Path) -> None:
    path = tmp_path / "vdbguard.prom"
    write_metrics(path, make_report(), collection="notes", duration_s=12.3456, now=1_700_000_000.5)
    samples = parse_exposition(path.read_text())
    assert value(samples, "scan_success") == 1
    assert value(samples, "records_scanned") == 10
    assert value(samples, "records_flagged") == 3
    assert value(samples, "records_skipped") == 0
    assert value(samples, "findings_by_severity", severity="critical") == 1
    assert value(samples, "findings_by_severity", severity="high") == 0  # every level, so a rate never gaps
    assert value(samples, "findings_by_pii_type", pii_type="PERSON") == 2
    assert value(samples, "scan_duration_seconds") == 12.346
    assert value(samples, "last_success_timestamp_seconds") == 1_700_000_000.5
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # the node exporter runs as another user
    assert [p.name for p in tmp_path.iterdir()] == ["vdbguard.prom"]  # no temporary file left behind


def test_label_values_are_escaped() -> None:
    odd = 'notes "prod"\nline two \\ end'
    text = render_metrics(make_report(), collection=odd, duration_s=1, now=1)
    assert 'collection="notes \\"prod\\"\\nline two \\\\ end"' in text
    plain = render_metrics(make_report(), collection="x", duration_s=1, now=1)
    assert len(text.splitlines()) == len(plain.splitlines())  # the newline never breaks a sample in two
    samples = parse_exposition(text)
    assert samples[("vdbguard_records_scanned", (("collection", odd),))] == 10


def test_a_scan_that_finds_nothing_still_writes_the_file(tmp_path: Path) -> None:
    clean = make_report().model_copy(update={"findings": [], "summary": bare_summary(10)})
    path = tmp_path / "m.prom"
    write_metrics(path, clean, collection="notes", duration_s=1, now=5)
    samples = parse_exposition(path.read_text())
    assert value(samples, "records_flagged") == 0 and value(samples, "findings_by_severity", severity="low") == 0
    assert value(samples, "last_success_timestamp_seconds") == 5
    assert not any(name == "vdbguard_findings_by_pii_type" for name, _ in samples)


def test_a_failed_scan_keeps_the_last_success(tmp_path: Path) -> None:
    path = tmp_path / "m.prom"
    write_metrics(path, None, collection="notes", duration_s=1, now=10)  # no success yet: none invented
    assert ("vdbguard_last_success_timestamp_seconds", (("collection", "notes"),)) not in parse_exposition(
        path.read_text()
    )
    write_metrics(path, make_report(), collection="notes", duration_s=1, now=100)
    write_metrics(path, None, collection="notes", duration_s=2, now=200)
    samples = parse_exposition(path.read_text())
    assert value(samples, "scan_success") == 0
    assert value(samples, "last_success_timestamp_seconds") == 100
    assert value(samples, "scan_duration_seconds") == 2
    assert ("vdbguard_records_scanned", (("collection", "notes"),)) not in samples


def test_a_failed_scan_reads_the_last_success_of_any_valid_file(tmp_path: Path) -> None:
    odd = 'notes "prod"\nline two \\ end'
    path = tmp_path / "m.prom"
    path.write_text(  # as vdbguard wrote it before prometheus_client did, and a label value that needs escaping
        "# HELP vdbguard_last_success_timestamp_seconds When a scan last finished (Unix time).\n"
        "# TYPE vdbguard_last_success_timestamp_seconds gauge\n"
        'vdbguard_last_success_timestamp_seconds{collection="other"} 7.0\n'
        'vdbguard_last_success_timestamp_seconds{collection="notes \\"prod\\"\\nline two \\\\ end"} 1700000000.5\n'
    )
    write_metrics(path, None, collection=odd, duration_s=1, now=10)
    kept = parse_exposition(path.read_text())[("vdbguard_last_success_timestamp_seconds", (("collection", odd),))]
    assert kept == 1_700_000_000.5
    path.write_text("not {an exposition file\n")
    write_metrics(path, None, collection="notes", duration_s=1, now=10)  # unreadable: no last success, no error
    assert value(parse_exposition(path.read_text()), "scan_success") == 0
    assert "last_success" not in path.read_text()


def test_unwritable_metrics_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "dir.prom").mkdir()
    with pytest.raises(VdbguardError, match="cannot write the metrics file"):
        write_metrics(tmp_path / "dir.prom", make_report(), collection="notes", duration_s=1)


def test_webhook_posts_the_counts_only(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    report = make_report(masked=False)
    with http_recorder() as (base, received):
        url = base.replace("http://", "http://hook-user:pa55word@") + "/hooks/T0/s3cr3tpath?token=abc"
        assert post_webhook(url, webhook_payload(report, 3.21))
    (request,) = received
    assert request["path"] == "/hooks/T0/s3cr3tpath?token=abc"
    assert request["headers"]["Content-Type"] == "application/json"
    assert base64.b64decode(request["headers"]["Authorization"].split()[1]) == b"hook-user:pa55word"
    body = json.loads(request["body"])
    assert body["records_scanned"] == 10 and body["records_flagged"] == 3 and body["records_skipped"] == 0
    assert body["by_severity"] == {"low": 1, "medium": 1, "high": 0, "critical": 1}
    assert body["by_pii_type"] == {"EMAIL": 1, "PERSON": 2, "PHONE": 1}
    assert body["collection"] == "notes" and body["duration_s"] == 3.21
    raw = request["body"].decode()
    assert "John" not in raw and "HYPERLINK" not in raw and "555" not in raw and "doc-1" not in raw
    assert "answered 200" in caplog.text
    for secret in ("pa55word", "hook-user", "s3cr3tpath", "token=abc"):
        assert secret not in caplog.text


def test_a_dead_webhook_only_warns(caplog: pytest.LogCaptureFixture) -> None:
    url = f"http://admin:hunter22@127.0.0.1:{free_port()}/hook"
    assert not post_webhook(url, webhook_payload(make_report(), 1), timeout=2)
    (record,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "webhook http://127.0.0.1:" in record.getMessage() and "failed" in record.getMessage()
    assert "hunter22" not in caplog.text and "admin" not in caplog.text


def test_a_webhook_that_answers_500_only_warns(caplog: pytest.LogCaptureFixture) -> None:
    with http_recorder(status=500) as (base, received):
        assert not post_webhook(base + "/hook", webhook_payload(make_report(), 1))
    assert len(received) == 1 and "HTTP Error 500" in caplog.text


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://u:pw123@host/x", "http://u:pw123@host:notaport/x", "hooks.example/x"]
)
def test_webhook_url_must_be_http(url: str) -> None:
    with pytest.raises(VdbguardError) as caught:
        check_webhook_url(url)
    assert "pw123" not in str(caught.value)
