"""report.html: one self-contained page for people, with plots drawn as inline SVG.

No JavaScript and nothing loaded from anywhere (a report about leaks must not phone home): the CSS is inline,
the plots are SVG written here, and a Content-Security-Policy meta tag blocks anything that slips in. Every
value from the report goes through Jinja2's autoescaping, and every label in an SVG through ``escape``:
record ids and recovered words are attacker-influenced.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import cache
from typing import ClassVar, NamedTuple

import jinja2
from markupsafe import Markup, escape

from vdbguard.reports.base import ReportWriter, strongest_evidence
from vdbguard.reports.schema import Evidence, Finding, Report, RunSummary, Severity

MAX_HTML_FINDINGS = 500
MAX_HISTORY_ROWS = 30
SEVERITY_COLOURS = {"critical": "#7f1d1d", "high": "#dc2626", "medium": "#f59e0b", "low": "#64748b"}
BAR_COLOUR = "#2563eb"
_SERIES_STYLES = (("#111827", ""), *((colour, "6 3") for colour in SEVERITY_COLOURS.values()))


def _num(value: float) -> str:
    """Compact tick labels: 3, 0.25, 1.5e+03."""
    return f"{value:.3g}"


def _svg(width: int, height: int, title: str, body: list[str]) -> Markup:
    label = escape(title)
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="{label}"><title>{label}</title>{"".join(body)}</svg>'
    )


def bar_chart(title: str, bars: Sequence[tuple[str, int]], colours: dict[str, str] | None = None) -> Markup:
    """Horizontal bars, one per (label, count), the count written at the end of each bar."""
    label_w, bar_w, row_h, top = 150, 300, 22, 26
    height = top + row_h * max(len(bars), 1) + 8
    body = [f'<text x="0" y="16" class="plot-title">{escape(title)}</text>']
    if not bars:
        body.append(f'<text x="{label_w}" y="{top + 15}" class="axis">none</text>')
    longest = max((count for _, count in bars), default=0) or 1
    for i, (label, count) in enumerate(bars):
        y = top + i * row_h
        width = round(bar_w * count / longest, 1)
        colour = (colours or {}).get(label, BAR_COLOUR)
        body += [
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" class="axis">{escape(label)}</text>',
            f'<rect x="{label_w}" y="{y + 3}" width="{width}" height="{row_h - 6}" fill="{colour}"/>',
            f'<text x="{label_w + width + 5}" y="{y + 15}" class="axis">{count}</text>',
        ]
    return _svg(label_w + bar_w + 50, height, title, body)


def histogram(title: str, values: Sequence[float], x_label: str, bins: int = 12) -> Markup:
    """Counts of ``values`` in ``bins`` equal-width bins from 0 (or the least value, if negative) to the largest."""
    left, top, plot_w, plot_h = 40, 26, 300, 110
    body = [f'<text x="0" y="16" class="plot-title">{escape(title)}</text>']
    low, high = min([0.0, *values]), max([0.0, *values])
    span = high - low or 1.0
    counts = [0] * bins
    for value in values:
        counts[min(int((value - low) / span * bins), bins - 1)] += 1
    tallest = max(counts) or 1
    bin_w = plot_w / bins
    for i, count in enumerate(counts):
        h = round(plot_h * count / tallest, 1)
        x = round(left + i * bin_w, 1)
        body.append(
            f'<rect x="{x}" y="{round(top + plot_h - h, 1)}" width="{round(bin_w - 1, 1)}" height="{h}" '
            f'fill="{BAR_COLOUR}"><title>{count}</title></rect>'
        )
    base = top + plot_h
    body += [
        f'<line x1="{left}" y1="{base}" x2="{left + plot_w}" y2="{base}" class="axis-line"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{base}" class="axis-line"/>',
        f'<text x="{left - 4}" y="{top + 9}" text-anchor="end" class="axis">{tallest}</text>',
        f'<text x="{left - 4}" y="{base}" text-anchor="end" class="axis">0</text>',
        f'<text x="{left}" y="{base + 15}" class="axis">{_num(low)}</text>',
        f'<text x="{left + plot_w}" y="{base + 15}" text-anchor="end" class="axis">{_num(high)}</text>',
        f'<text x="{left + plot_w / 2}" y="{base + 30}" text-anchor="middle" class="axis">{escape(x_label)}</text>',
        f'<text x="12" y="{top + plot_h / 2}" text-anchor="middle" class="axis" '
        f'transform="rotate(-90 12 {top + plot_h / 2})">records</text>',
    ]
    return _svg(left + plot_w + 20, base + 38, title, body)


def line_chart(title: str, x_labels: Sequence[str], series: dict[str, Sequence[int]], y_label: str) -> Markup:
    """One polyline per series over the same x positions, with a legend; needs at least two points."""
    left, top, plot_w, plot_h, legend_w = 50, 26, 520, 170, 110
    body = [f'<text x="0" y="16" class="plot-title">{escape(title)}</text>']
    tallest = max((max(values, default=0) for values in series.values()), default=0) or 1
    step = plot_w / max(len(x_labels) - 1, 1)
    base = top + plot_h

    def xy(i: int, value: int) -> tuple[float, float]:
        return round(left + i * step, 1), round(base - plot_h * value / tallest, 1)

    for k, (name, values) in enumerate(series.items()):
        colour, dashes = _SERIES_STYLES[k % len(_SERIES_STYLES)]
        points = " ".join("{},{}".format(*xy(i, v)) for i, v in enumerate(values))
        dash = f' stroke-dasharray="{dashes}" stroke-dashoffset="{k * 2}"' if dashes else ""
        body.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for i, v in enumerate(values):
            x, y = xy(i, v)
            body.append(f'<circle cx="{x}" cy="{y}" r="3" fill="{colour}"><title>{escape(name)}: {v}</title></circle>')
        ly = top + 10 + k * 18
        body += [
            f'<rect x="{left + plot_w + 18}" y="{ly - 8}" width="10" height="10" fill="{colour}"/>',
            f'<text x="{left + plot_w + 33}" y="{ly + 1}" class="axis">{escape(name)}</text>',
        ]
    shown = min(len(x_labels), 6)  # evenly spaced date labels, first and last included, room for "03-01 06:00"
    ticks = sorted({round(j * (len(x_labels) - 1) / max(shown - 1, 1)) for j in range(shown)})
    body += [
        f'<text x="{xy(i, 0)[0]}" y="{base + 15}" text-anchor="middle" class="axis">{escape(x_labels[i])}</text>'
        for i in ticks
    ]
    body += [
        f'<line x1="{left}" y1="{base}" x2="{left + plot_w}" y2="{base}" class="axis-line"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{base}" class="axis-line"/>',
        f'<text x="{left - 7}" y="{top + 9}" text-anchor="end" class="axis">{tallest}</text>',
        f'<text x="{left - 7}" y="{base}" text-anchor="end" class="axis">0</text>',
        f'<text x="{left + plot_w / 2}" y="{base + 32}" text-anchor="middle" class="axis">run finished (UTC)</text>',
        f'<text x="12" y="{top + plot_h / 2}" text-anchor="middle" class="axis" '
        f'transform="rotate(-90 12 {top + plot_h / 2})">{escape(y_label)}</text>',
    ]
    return _svg(left + plot_w + 20 + legend_w, base + 40, title, body)


def _severity_bars(by_severity: dict[str, int]) -> list[tuple[str, int]]:
    return [(sev.value, by_severity.get(sev.value, 0)) for sev in reversed(Severity)]


def score_margins(findings: Iterable[Finding]) -> dict[str, list[float]]:
    """Attack -> ``score - threshold`` of each of its evidence items: attacks score on different scales."""
    margins: dict[str, list[float]] = defaultdict(list)
    for finding in findings:
        for evidence in finding.evidence:
            margins[evidence.attack].append(evidence.score - evidence.threshold)
    return dict(sorted(margins.items()))


def trend_chart(history: Sequence[RunSummary]) -> Markup | None:
    """Records flagged per run, in total and per severity; None before a job's second run."""
    if len(history) < 2:
        return None
    same_day = len({run.finished_at.date() for run in history}) < len(history)
    labels = [run.finished_at.strftime("%m-%d %H:%M" if same_day else "%Y-%m-%d") for run in history]
    series: dict[str, list[int]] = {"flagged": [run.records_flagged for run in history]}
    for sev in reversed(Severity):
        counts = [run.by_severity.get(sev.value, 0) for run in history]
        if any(counts):
            series[sev.value] = counts
    return line_chart("Records flagged per run", labels, series, "records")


def plots(report: Report) -> dict[str, object]:
    s = report.summary
    return {
        "severity": bar_chart("Records by severity", _severity_bars(s.by_severity), SEVERITY_COLOURS),
        "pii": bar_chart("Records by PII type", sorted(s.by_pii_type.items(), key=lambda kv: (-kv[1], kv[0]))),
        "margins": [
            histogram(f"{attack} ({len(values)} evidence)", values, "score − threshold")
            for attack, values in score_margins(report.iter_findings()).items()
        ],
        "trend": trend_chart(report.history),
    }


class FindingRow(NamedTuple):
    finding: Finding
    best: Evidence | None
    recovered: str


def finding_rows(report: Report, limit: int | None = None) -> list[FindingRow]:
    """Most severe first; within a severity, the strongest evidence (margin over its threshold) first."""

    def row(finding: Finding) -> FindingRow:
        best = strongest_evidence(finding) if finding.evidence else None
        recovered = (best and best.recovered) or next((e.recovered for e in finding.evidence if e.recovered), "")
        return FindingRow(finding, best, recovered)

    def order(r: FindingRow) -> tuple[int, float]:
        return -r.finding.severity.rank, -(r.best.score - r.best.threshold if r.best else 0)

    rows = map(row, report.iter_findings())
    return sorted(rows, key=order) if limit is None else heapq.nsmallest(limit, rows, key=order)


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("vdbguard.reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = lambda value, digits=2: "n/a" if value is None else f"{value:.{digits}f}"
    env.filters["pct"] = lambda value, digits=0: "n/a" if value is None else f"{value:.{digits}%}"
    return env.get_template("report.html.j2")


def render_html(report: Report) -> str:
    return _template().render(
        report=report,
        finding_count=report.finding_count,
        rows=finding_rows(report, MAX_HTML_FINDINGS),
        problems=report.record_problems[:MAX_HTML_FINDINGS],
        max_rows=MAX_HTML_FINDINGS,
        max_history_rows=MAX_HISTORY_ROWS,
        severities=[sev.value for sev in reversed(Severity)],
        plots=plots(report),
    )


class HtmlReport(ReportWriter):
    name: ClassVar[str] = "html"
    filename: ClassVar[str] = "report.html"

    def render(self, report: Report) -> str:
        return render_html(report)
