"""report.md: the same findings for people, most severe first.

Record ids, collection names, recovered words and most other values here come from the scanned store or the
user, so a hostile store could write Markdown (or the raw HTML many renderers allow) into the report. Every
such value goes through :func:`code_span` or :func:`escape_text`; only the template's own strings are Markdown.
"""

from __future__ import annotations

import heapq
import re
from typing import ClassVar

from vdbguard.reports.base import ReportWriter
from vdbguard.reports.schema import VECTOR, Report, Severity

MAX_MARKDOWN_FINDINGS = 200
NOT_CONFIRMED = "not confirmed by the detector"  # which misses some: never read as "the text lacks it"

# Characters Markdown (CommonMark, GFM, GitHub's math) may read as syntax anywhere in a line. `_` between two
# letters or digits cannot start or end emphasis, so ``EMAIL_ADDRESS`` stays readable; `!`, `(` and `)` are inert
# once `[` and `]` are escaped.
_MARKDOWN_PUNCTUATION = re.compile(r"[\\`*\[\]<>&|~$]|_(?![^\W_])|(?<![^\W_])_")
# Block markers that only count at the start of a line: heading, list, setext underline, ordered list.
_LINE_START_MARKER = re.compile(r"^( *)(?:([-+=#])|(\d+)([.)]))")


def visible(value: str) -> str:
    """``value`` with every character that does not print (line breaks, tabs, NUL, U+2028, bidi controls)
    written as its Python escape, ``\\n`` or ``\\u2028``: a line break in a value must not start a new
    Markdown block, and a reader should see that it is there."""
    if value.isprintable():
        return value
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in value)


def code_span(value: str) -> str:
    """``value`` shown verbatim as a code span, where nothing is Markdown or HTML (not even a GitHub autolink).

    A backslash cannot escape anything inside a code span, so the fence is one backtick longer than the
    longest run of backticks in the value, padded with a space where the value starts or ends with a backtick
    or a space (CommonMark strips one such space from each end). Inside a table, :func:`_table` escapes `|`.
    """
    shown = visible(value)
    if not shown:
        return '""'
    fence = "`" * (max(map(len, re.findall("`+", shown)), default=0) + 1)
    needs_padding = shown[0] == "`" or shown[-1] == "`" or (shown[0] == shown[-1] == " " and not shown.isspace())
    pad = " " if needs_padding else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def escape_text(value: str) -> str:
    """``value`` as plain Markdown text that reads as itself: for prose such as a problem description, where a
    code span would be noise. Values a store names (ids, locations, recovered words) go in :func:`code_span`:
    GitHub turns a bare URL or e-mail address in plain text into a link, which no escape prevents."""
    escaped = _MARKDOWN_PUNCTUATION.sub(lambda m: "\\" + m.group(), visible(value))
    return _LINE_START_MARKER.sub(
        lambda m: m.group(1) + (f"\\{m.group(2)}" if m.group(2) else f"{m.group(3)}\\{m.group(4)}"), escaped
    )


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A GFM table of cells already made safe by :func:`code_span` or :func:`escape_text`. GFM splits a row
    into cells before anything else, even inside code spans, and takes exactly one backslash off an escaped `|`,
    so every `|` gets one more here."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def render_markdown(report: Report) -> str:
    s, t = report.summary, report.target
    lines = [
        f"# vdbguard scan: {code_span(t.collection)} ({escape_text(t.connector)})",
        "",
        f"Scanned {s.records_scanned} records at {code_span(t.location)} on {report.created_at:%Y-%m-%d %H:%M} UTC "
        f"with embedder {code_span(report.embedder.name)} ({report.embedder.dimension}-d)"
        + (f" and PII detector {code_span(report.detector)}. " if report.detector else ". ")
        + f"**{s.records_flagged} records leak PII** through their vectors"
        + (f"; **{s.stored_text_flagged} keep PII or secrets in plain text**" if s.stored_text_flagged else "")
        + f"; {s.records_skipped} were skipped.",
        "",
    ]
    if not report.masked:
        lines += [
            "> **Warning:** this report shows recovered PII unmasked (`--show-pii`). Handle it as PII.",
            "",
        ]
    lines += ["## Summary", ""]
    lines += _table(
        ["severity", "records"],
        [[sev.value, str(s.by_severity.get(sev.value, 0))] for sev in reversed(Severity)],
    )
    lines += [""]
    lines += _table(["PII type", "records"], [[escape_text(k), str(v)] for k, v in sorted(s.by_pii_type.items())])
    if s.records_with_source_text:
        lines += [
            "",
            f"Of {s.records_with_source_text} records that store their text, {s.source_pii_records} contain PII "
            f"according to the detector; attacks flagged {s.source_pii_flagged} of those from the vector alone.",
        ]
    lines += _coverage(report)
    lines += _quality(report)
    lines += ["", "## Attacks", ""]
    lines += _table(
        ["attack", "what it does", "threshold", "held-out quality"],
        [
            [
                escape_text(a.name),
                escape_text(a.description),
                f"{a.threshold:.2f}",
                ", ".join(f"{escape_text(k)}={v}" for k, v in a.metrics.items()),
            ]
            for a in report.attacks
        ],
    )
    most_severe = heapq.nsmallest(
        MAX_MARKDOWN_FINDINGS,
        report.iter_findings(),
        key=lambda f: (-f.severity.rank, -max(e.score for e in f.evidence)),
    )
    lines += ["", f"## Findings ({report.finding_count})", ""]
    if report.finding_count > MAX_MARKDOWN_FINDINGS:
        lines += [f"The {MAX_MARKDOWN_FINDINGS} most severe are listed; report.json has all of them.", ""]
    rows = []
    for finding in most_severe:
        evidence = "; ".join(
            f"{escape_text(e.attack)}: {escape_text(e.pii_type)} {e.score:.2f}≥{e.threshold:.2f}"
            + (f" {code_span(e.recovered)}" if e.recovered else "")
            for e in finding.evidence
        )
        evidence += "".join(
            f"; {escape_text(a.attack)}: {escape_text(a.attribute)} {code_span(a.value)} "
            f"{a.probability:.2f}≥{a.threshold:.2f}"
            for a in finding.inferred_attributes
        )
        confirmed = "n/a"
        if finding.confirmed_by_source is not None:
            found = finding.confirmed_by_source.items()
            confirmed = ", ".join(f"{escape_text(k)}: {'found' if v else NOT_CONFIRMED}" for k, v in found)
        rows.append(
            [
                code_span(finding.record_id),
                "vector" if finding.kind == VECTOR else "stored text: " + ", ".join(map(code_span, finding.fields)),
                finding.severity.value,
                ", ".join(map(escape_text, finding.pii_types)),
                evidence,
                " ".join(map(code_span, finding.recovered_words[:8])),
                confirmed,
            ]
        )
    header = ["record", "kind", "severity", "PII", "evidence", "recovered words", "detector on stored text"]
    lines += _table(header, rows)
    if report.record_problems:
        lines += ["", f"## Record problems ({len(report.record_problems)})", ""]
        lines += _table(
            ["record", "field", "problem"],
            [
                [code_span(p.record_id), code_span(p.field), escape_text(p.problem)]
                for p in report.record_problems[:MAX_MARKDOWN_FINDINGS]
            ],
        )
    lines += [
        "",
        "## What to do",
        "",
        "- Treat flagged vectors as the PII they encode: restrict access to the collection like the source documents.",
        "- Redact PII before embedding (transform `redact`, `vdbguard.hooks.redact_then_embed`): on our "
        "benchmark it is the one write-path defense that held against the strongest attacker, adapted.",
        "- Re-run this scan after changes (with `--state`, only new or changed records are attacked); "
        "`--fail-on` makes it a CI or scheduled-job gate.",
        "",
    ]
    return "\n".join(lines)


def _coverage(report: Report) -> list[str]:
    """What this run attacked, carried over, sampled and deep-scanned, and the job's recent runs."""
    c = report.coverage
    if c is None:
        return []
    lines = [
        "",
        "## Coverage",
        "",
        f"Of {c.records_in_collection} records, {c.records_attacked} were new or changed and attacked in this run, "
        f"{c.records_carried_over} kept their verdict from an earlier run"
        + (
            f"; {c.records_in_collection - c.records_attacked - c.records_carried_over} are not covered yet "
            f"(fast tier sample {c.fast_tier_sample:.0%})"
            if c.fast_tier_sample < 1
            else ""
        )
        + ".",
    ]
    if c.deep_attacks:
        lines += [
            "",
            f"Deep tier ({', '.join(map(escape_text, c.deep_attacks))}): {c.deep_records} records, "
            f"{c.deep_flagged_covered} of the {c.deep_flagged_by_fast} due"
            + (" — the budget ran out; the next run goes on." if c.deep_budget_exhausted else "."),
        ]
    if c.findings_resolved or c.findings_suppressed:
        lines += [
            "",
            f"{c.findings_resolved} findings resolved (record deleted); {c.findings_suppressed} suppressed "
            "(accepted in the job file).",
        ]
    if len(report.history) > 1:
        lines += ["", "Recent runs:", ""]
        lines += _table(
            ["finished", "scanned", "attacked", "flagged"],
            [
                [
                    f"{r.finished_at:%Y-%m-%d %H:%M}",
                    str(r.records_scanned),
                    str(r.records_attacked),
                    str(r.records_flagged),
                ]
                for r in report.history[-10:]
            ],
        )
    return lines


def _quality(report: Report) -> list[str]:
    """What a flag means: the calibration measured on this store, and the benchmark on real text."""
    lines: list[str] = []
    if report.verdict is not None:
        verdict = report.verdict
        lines += ["", "## Verdict", "", f"Judged by the {verdict.name} verdict: {escape_text(verdict.reason)}."]
    c = report.calibration
    if c is not None:
        source = (
            f"reused from {code_span(c.loaded_from)}" if c.loaded_from else f"fitted on {c.records_labelled} records"
        )
        lines += [
            "",
            "## Owner-side calibration",
            "",
            f"Probes and a stacked verdict {source} that keep their text, labelled by the PII detector; "
            f"target false-positive rate {c.target_false_positive_rate:.0%}. Held out on this store: recall "
            f"{c.held_out_recall}, false-positive rate {c.held_out_false_positive_rate} (against the detector's "
            "labels, so no better than the detector).",
        ]
        if c.records_unsure:
            lines += [
                f"{c.records_unsure} of them set no cutoff: the detector found no PII in their text but nearly found "
                "some, and a name it missed, counted clean, would raise the cutoffs."
            ]
        if c.aligned_to:
            lines += [f"Attacks ran aligned into {code_span(c.aligned_to)} (held-out cosine {c.alignment_cosine})."]
    if report.quality_not_measured and not report.expected_quality:
        lines += ["", "## What a flag means", "", escape_text(report.quality_not_measured)]
    if report.expected_quality:
        lines += [
            "",
            "## What a flag means",
            "",
            f"This kind of scan ({escape_text(report.expected_quality[0].mode)} verdict, embedder "
            f"{code_span(report.embedder.name)}), measured on real text (benchmarks/real_text.py):",
            "",
        ]
        lines += _table(
            ["text", "recall", "false positives"],
            [
                [escape_text(q.source), f"{q.recall:.0%}", f"{q.false_positive_rate:.1%}"]
                for q in report.expected_quality
            ],
        )
    return lines


class MarkdownReport(ReportWriter):
    name: ClassVar[str] = "md"
    filename: ClassVar[str] = "report.md"

    def render(self, report: Report) -> str:
        return render_markdown(report)
