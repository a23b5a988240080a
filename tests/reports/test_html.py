"""report.html: self-contained (no script, nothing external), escaped, plotted, and clean in a real headless Chromium.

Also load_report: report.json round trips, and files that are not a current report are refused with a reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import struct
import subprocess
from datetime import UTC, datetime, timedelta
from functools import partial
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.helpers import benchmark_quality, make_evidence, make_finding
from vdbguard.errors import VdbguardError
from vdbguard.reports import write_reports
from vdbguard.reports.html import (
    MAX_HISTORY_ROWS,
    MAX_HTML_FINDINGS,
    bar_chart,
    histogram,
    line_chart,
    render_html,
    score_margins,
    trend_chart,
)
from vdbguard.reports.loading import load_report
from vdbguard.reports.schema import (
    SCHEMA_VERSION,
    AttackInfo,
    Coverage,
    EmbedderInfo,
    Finding,
    InferredAttribute,
    RecordProblem,
    Report,
    RunSummary,
    Severity,
    Summary,
    Target,
)

HOSTILE = "<script>alert(1)</script>"
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
INSTALL = "bash scripts/chromium.sh install"
T0 = datetime(2025, 3, 1, 6, 0, tzinfo=UTC)


def make_report(masked: bool = True, runs: int = 3, extra_findings: int = 0) -> Report:
    evidence = partial(make_evidence, masked=masked)
    findings = [
        make_finding(
            HOSTILE,
            Severity.LOW,
            evidence("pii-probe", "PHONE", 0.52, 0.5, "555-0100"),
            recovered_words=["<img src=x onerror=alert(2)>", "call"],
        ),
        Finding(
            record_id="doc-1",
            collection="notes",
            severity=Severity.CRITICAL,
            pii_types=["EMAIL", "PERSON"],
            evidence=[evidence("pii-probe", "PERSON", 0.9, 0.5, "John Smith"), evidence("fused", "EMAIL", 0.95, 0.9)],
            recovered_words=["john", "smith", "mail"],
            confirmed_by_source={"EMAIL": True, "PERSON": False},
            inferred_attributes=[
                InferredAttribute(attack="attribute-probe", attribute="sex", value="m", probability=0.8, threshold=0.7)
            ],
        ),
        make_finding(
            "doc-2", Severity.HIGH, evidence("bag-of-words", "PERSON", 0.7, 0.6, "Jane Doe"), namespace="tenant-a"
        ),
        make_finding("doc-3", Severity.MEDIUM, evidence("pii-probe", "LOCATION", 0.66, 0.5, "Berlin")),
    ]
    findings += [
        make_finding(f"bulk-{i}", Severity.LOW, evidence("pii-probe", "PHONE", 0.5 + (i % 40) / 100, 0.5))
        for i in range(extra_findings)
    ]
    by_severity = {sev.value: sum(f.severity == sev for f in findings) for sev in Severity}
    history = [
        RunSummary(
            finished_at=T0 + timedelta(days=i),
            records_scanned=100,
            records_flagged=len(findings) + 2 - i,
            by_severity={**by_severity, "low": by_severity["low"] + 2 - i},
            records_attacked=100 if i == 0 else 7,
        )
        for i in range(runs)
    ]
    return Report(
        tool_version="0.1.0",
        created_at=T0 + timedelta(days=runs - 1),
        target=Target(connector="chroma", collection="notes", location="./db", dimension=384, count=100, metric=None),
        embedder=EmbedderInfo(name="all-MiniLM-L6-v2", fingerprint="abc123", dimension=384),
        attacks=[
            AttackInfo(name="pii-probe", description="linear probes per PII type", threshold=0.5, metrics={"auc": 0.9}),
            AttackInfo(name="bag-of-words", description="recovers words", threshold=0.6, metrics={"f1": 0.4}),
        ],
        masked=masked,
        summary=Summary(
            records_scanned=100,
            records_flagged=len(findings),
            records_skipped=1,
            by_severity=by_severity,
            by_pii_type={"PERSON": 2, "EMAIL": 1, "PHONE": 1 + extra_findings, "LOCATION": 1},
            records_with_source_text=10,
            source_pii_records=4,
            source_pii_flagged=3,
        ),
        findings=findings,
        record_problems=[RecordProblem(record_id="bad-1", field="embedding", problem="has NaN values")],
        expected_quality=[benchmark_quality("wikipedia bios", 0.62, 0.031)],
        coverage=Coverage(
            records_in_collection=100,
            records_attacked=7,
            records_carried_over=93,
            fast_tier_sample=1.0,
            deep_attacks=["gradient"],
            deep_records=3,
            deep_flagged_by_fast=5,
            deep_flagged_covered=3,
            deep_budget_exhausted=True,
            findings_resolved=2,
            findings_suppressed=1,
        ),
        history=history,
    )


class Page(HTMLParser):
    """Every start tag with its attributes, the <style> text, and the visible text."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.style: list[str] = []
        self._in: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("style", "title"):
            self._in.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self._in and self._in[-1] == tag:
            self._in.pop()

    def handle_data(self, data: str) -> None:
        (self.style if self._in[-1:] == ["style"] else self.text).append(data)

    def all(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.tags if name == tag]

    @property
    def body(self) -> str:
        return " ".join(" ".join(self.text).split())


URL_ATTRS = {"src", "href", "xlink:href", "srcset", "action", "formaction", "poster", "data", "background", "ping"}


def test_page_is_self_contained_and_escaped() -> None:
    html = render_html(make_report())
    page = Page(html)
    names = {name for name, _ in page.tags}
    assert not names & {"script", "link", "iframe", "object", "embed", "base", "form", "img", "audio", "video"}
    for tag, attrs in page.tags:
        for attr, value in attrs.items():
            assert not attr.startswith("on"), (tag, attr)
            if attr in URL_ATTRS:
                assert value is not None and value.startswith(("#", "data:")), (tag, attr, value)
    style = "".join(page.style)
    assert "@import" not in style and "url(" not in style
    [csp] = [m for m in page.all("meta") if m.get("http-equiv") == "Content-Security-Policy"]
    assert csp["content"] == CSP
    # the hostile id and words arrive as text, escaped, never as markup
    assert HOSTILE in page.body and "<img src=x onerror=alert(2)>" in page.body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # every in-page link goes to a section that exists
    ids = {attrs.get("id") for _, attrs in page.tags}
    assert all(a["href"][1:] in ids for a in page.all("a"))


def test_page_content_plots_and_order() -> None:
    html = render_html(make_report())
    page = Page(html)
    text = page.body
    for words in (
        "vdbguard scan: notes (chroma)",
        "./db",
        "all-MiniLM-L6-v2",
        "2025-03-03 06:00 UTC",
        "vdbguard 0.1.0",
        f"report schema {SCHEMA_VERSION}",
        "4 of 100 records leak PII",
        "carried over from an earlier run (unchanged) 93",
        "fast-tier sample 100.0% of records",
        "fast-tier flags the deep tier reached 3 of 5",
        "deep-tier budget exhausted yes",
        "findings resolved (record deleted) 2",
        "findings suppressed (allow list) 1",
        "wikipedia bios 62% 3.1%",
        "linear probes per PII type",
        "auc=0.900",
        "J*** S****",
        "john smith mail",
        "EMAIL: found, PERSON: not confirmed by the detector",
        "ns tenant-a",
        "sex m 0.80",
        "Record problems (1)",
        "has NaN values",
    ):
        assert words in text, words
    assert "unmasked" not in text
    assert "report.json has all" not in text
    # findings most severe first
    cells = [attrs for attrs in page.all("span") if (attrs.get("class") or "").startswith("sev ")]
    order = [c["class"].split("-")[-1] for c in cells][len(Severity) :]  # after the summary cards
    assert order == ["critical", "high", "medium", "low"]
    # plots: severity, PII type, one margin histogram per attack, the trend; each titled and labelled
    svgs = page.all("svg")
    labels = [svg["aria-label"] for svg in svgs]
    assert labels == [
        "Records by severity",
        "Records by PII type",
        "Records flagged per run",
        "bag-of-words (1 evidence)",
        "fused (1 evidence)",
        "pii-probe (3 evidence)",
    ]
    assert all(svg["role"] == "img" for svg in svgs)
    assert html.count("<title>Records by severity</title>") == 1
    assert "score − threshold" in text and "run finished (UTC)" in text


def test_unmasked_warning_and_trend_placeholder() -> None:
    html = render_html(make_report(masked=False, runs=1))
    assert "<title>[UNMASKED PII] vdbguard scan: notes (chroma)</title>" in html
    text = Page(html).body
    assert "this report shows recovered PII unmasked (--show-pii). Handle it as PII." in text
    assert "John Smith" in text
    assert "The trend appears after the second run of a job with a state file." in text
    assert "Records flagged per run" not in text


def test_findings_and_history_capped() -> None:
    report = make_report(extra_findings=MAX_HTML_FINDINGS, runs=MAX_HISTORY_ROWS + 5)
    page = Page(render_html(report))
    rows = [a for a in page.all("td") if a.get("class") == "id mono"]
    assert len(rows) == MAX_HTML_FINDINGS + 1  # the findings shown plus the one skipped record
    assert f"report.json has all {MAX_HTML_FINDINGS + 4}" in page.body
    assert f"The last {MAX_HISTORY_ROWS} of {MAX_HISTORY_ROWS + 5} runs are listed" in page.body
    assert page.body.count(" 06:00 100 ") == MAX_HISTORY_ROWS  # one history row per run listed


def test_svg_helpers() -> None:
    bars = bar_chart("by <type>", [("A&B", 4), ("b", 0)])
    assert "<title>by &lt;type&gt;</title>" in bars and "A&amp;B" in bars and "<rect" in bars
    assert 'width="0.0"' in bars  # a zero bar stays drawable
    assert "none" in bar_chart("empty", [])

    def counts(svg: str) -> list[int]:
        return [int(n) for n in re.findall(r"<title>(\d+)</title>", svg)]

    assert counts(histogram("same", [0.2, 0.2, 0.2], "margin", bins=4)) == [0, 0, 0, 3]  # bins start at 0
    assert counts(histogram("spread", [0.0, 0.1, 0.5, 1.0], "margin", bins=2)) == [2, 2]
    assert counts(histogram("below", [-0.5, 0.5], "margin", bins=2)) == [1, 1]
    assert counts(histogram("zeros", [0.0, 0.0], "margin", bins=2)) == [2, 0]
    assert counts(histogram("empty", [], "margin", bins=2)) == [0, 0]
    line = line_chart("t", ["a", "b"], {"x<y": [1, 3]}, "records")
    assert "x&lt;y" in line and line.count("<circle") == 2
    report = make_report()
    assert score_margins(report.findings)["pii-probe"] == pytest.approx([0.02, 0.4, 0.16])
    assert trend_chart(report.history[:1]) is None
    trend = trend_chart(report.history)
    assert trend is not None and "2025-03-01" in trend and "flagged: 6" in trend


def test_write_reports_html(tmp_path: Path) -> None:
    [path] = write_reports(make_report(), tmp_path, ["html"])
    assert path == tmp_path / "report.html"
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


# --- load_report ---------------------------------------------------------------------------------------------


def test_load_report_round_trip(tmp_path: Path) -> None:
    report = make_report(masked=False)
    [path] = write_reports(report, tmp_path, ["json"])
    loaded = load_report(path)
    assert loaded == report
    assert render_html(loaded) == render_html(report)


def test_load_report_reads_older_minor_versions(tmp_path: Path) -> None:
    data = json.loads(make_report().model_dump_json())
    for newer in ("coverage", "history", "expected_quality", "calibration"):
        del data[newer]
    for finding in data["findings"]:
        del finding["inferred_attributes"]
    data["schema_version"] = "1.0"
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    loaded = load_report(path)
    assert loaded.schema_version == "1.0" and loaded.coverage is None and loaded.history == []
    assert "The trend appears after the second run" in Page(render_html(loaded)).body


def _refusal(path: Path) -> str:
    with pytest.raises(VdbguardError) as info:
        load_report(path)
    return str(info.value)


def test_load_report_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    data = json.loads(make_report().model_dump_json())
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({**data, "schema_version": "2.0"}))
    assert "newer than this vdbguard reads" in _refusal(newer) and "upgrade vdbguard" in _refusal(newer)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({**data, "summary": {"records_scanned": "many"}}))
    assert "does not validate: summary.records_scanned" in _refusal(broken)

    write_reports(make_report(), tmp_path, ["md", "html", "sarif"])
    assert "is a Markdown file (report.md?)" in _refusal(tmp_path / "report.md")
    assert "is an HTML page (report.html?)" in _refusal(tmp_path / "report.html")
    assert "is a SARIF log (report.sarif?)" in _refusal(tmp_path / "report.sarif")
    state = tmp_path / "state.db"
    with sqlite3.connect(state) as db:
        db.execute("create table runs (id integer)")
    db.close()
    assert "is an SQLite database" in _refusal(state)
    assert "pass the report.json" in _refusal(state)
    assert "no report at" in _refusal(tmp_path / "missing.json")
    assert "is a folder" in _refusal(tmp_path)
    other = tmp_path / "other.json"
    other.write_text("[1, 2]")
    assert "is JSON but not a vdbguard report" in _refusal(other)


# --- a real headless Chromium --------------------------------------------------------------------------------

# Chromium logs each console message, CSP violations included, as `...:INFO:CONSOLE:<line>] "<message>", source: ...`.
_CONSOLE = re.compile(r":CONSOLE(?::\d+)?\]|Content Security Policy|Uncaught ")


def _chromium() -> str:
    exe = shutil.which("chromium")
    if exe is None:
        message = f"chromium is not installed: {INSTALL}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return exe


def _screenshot(exe: str, page: Path, tmp_path: Path, name: str) -> tuple[Path, list[str]]:
    """Render ``page`` headless; return the PNG and the console lines Chromium logged."""
    png = tmp_path / f"{name}.png"
    args = [
        exe,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / f'profile-{name}'}",
        f"--screenshot={png}",
        "--window-size=1280,2000",
        "--enable-logging=stderr",
        "--v=0",
        page.as_uri(),
    ]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    return png, [line for line in done.stderr.splitlines() if _CONSOLE.search(line)]


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_chromium_renders_the_report_cleanly(tmp_path: Path) -> None:
    exe = _chromium()
    from PIL import Image  # Pillow comes with the test extra (matplotlib needs it)

    # First prove the log check sees what it must: a console error and a resource the CSP blocks.
    canary = tmp_path / "canary.html"
    canary.write_text(
        f'<!DOCTYPE html><meta http-equiv="Content-Security-Policy" content="{CSP}; script-src \'unsafe-inline\'">'
        '<img src="https://example.invalid/x.png"><script>console.error("canary-error")</script><p>canary</p>'
    )
    _, canary_lines = _screenshot(exe, canary, tmp_path, "canary")
    assert any("Content Security Policy" in line for line in canary_lines), canary_lines
    assert any("canary-error" in line for line in canary_lines), canary_lines

    [path] = write_reports(make_report(masked=False), tmp_path, ["html"])
    png, console = _screenshot(exe, path, tmp_path, "report")
    assert console == []
    assert _png_size(png) == (1280, 2000)
    with Image.open(png) as image:
        rgb = image.convert("RGB")
        colours = rgb.getcolors(maxcolors=1 << 20) or []
    counts = {colour: n for n, colour in colours}
    assert len(counts) > 50  # text, tables, plots: far from a blank page
    assert counts.get((0x25, 0x63, 0xEB), 0) > 2000  # the plots' bars were drawn
    assert counts.get((0x7F, 0x1D, 0x1D), 0) > 200  # critical: badge and severity bar
    assert counts.get((0xFE, 0xF2, 0xF2), 0) > 5000  # the unmasked warning banner's background
