"""report.md under a hostile store: rendered by a CommonMark renderer that allows raw HTML, no value from the
store adds an element, a heading, a link or a table cell, and every value still reads as itself."""

from __future__ import annotations

from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from tests.helpers import benchmark_quality, make_evidence
from vdbguard.masking import mask_if
from vdbguard.reports import write_reports
from vdbguard.reports.markdown import render_markdown
from vdbguard.reports.schema import (
    AttackInfo,
    Coverage,
    EmbedderInfo,
    Finding,
    InferredAttribute,
    OwnerCalibration,
    RecordProblem,
    Report,
    Severity,
    Summary,
    Target,
)

PLAIN = "plain"
# What each hostile value must look like to a reader of the rendered page: non-printing characters shown as
# their Python escapes, everything else as written.
HOSTILE = {
    "x`<img src=x onerror=alert(2)>`y": "x`<img src=x onerror=alert(2)>`y",
    "crlf\r\n# Injected heading": "crlf\\r\\n# Injected heading",
    "a|b": "a|b",
    "[click](javascript:alert(1))": "[click](javascript:alert(1))",
    "![i](http://x/y.png)": "![i](http://x/y.png)",
    "**bold**": "**bold**",
    "<script>alert(1)</script>": "<script>alert(1)</script>",
    "\\": "\\",
    "1. item": "1. item",
    "> quote": "> quote",
    "line\u2028separator": "line\\u2028separator",
    "nul\x00tab\tend": "nul\\x00tab\\tend",
    "``fenced`` ": "``fenced`` ",
    "&lt;b&gt; &amp;": "&lt;b&gt; &amp;",
    "- item\n---\n===": "- item\\n---\\n===",
}
MARKDOWN = MarkdownIt("commonmark", {"html": True}).enable("table")


def report_with(value: str, masked: bool = False, recovered: str | None = None) -> Report:
    """A report in which every string a store or a user could set is ``value`` (the recovered values are
    ``recovered``, masked if ``masked``, when given); the rest is fixed."""
    recovered = mask_if(value if recovered is None else recovered, masked)
    evidence = make_evidence("pii-probe", "PERSON", 0.9, 0.5, recovered)
    findings = [
        Finding(
            record_id=value,
            collection=value,
            severity=Severity.CRITICAL,
            pii_types=["PERSON", value],
            evidence=[evidence, make_evidence("fused", value, 0.95, 0.9)],
            recovered_words=[recovered, "call"],
            confirmed_by_source={value: True},
            inferred_attributes=[
                InferredAttribute(
                    attack="attribute-probe",
                    attribute=value,
                    value=recovered,
                    probability=0.8,
                    threshold=0.7,
                )
            ],
        ),
        Finding(
            record_id="doc-2",
            collection=value,
            severity=Severity.LOW,
            pii_types=["PHONE"],
            evidence=[make_evidence("pii-probe", "PHONE", 0.55, 0.5)],
        ),
    ]
    return Report(
        tool_version="0.1.0",
        created_at=datetime(2025, 1, 1, tzinfo=UTC),
        target=Target(connector=value, collection=value, location=value, dimension=384, count=10, metric=None),
        embedder=EmbedderInfo(name=value, fingerprint="abc", dimension=384),
        attacks=[AttackInfo(name="pii-probe", description=value, threshold=0.5, metrics={"auc": 0.9})],
        masked=masked,
        summary=Summary(
            records_scanned=10,
            records_flagged=2,
            records_skipped=1,
            by_severity={"critical": 1, "low": 1},
            by_pii_type={"PERSON": 1, "PHONE": 1, value: 1},
            records_with_source_text=1,
            source_pii_records=1,
            source_pii_flagged=1,
        ),
        findings=findings,
        record_problems=[RecordProblem(record_id=value, field=value, problem=value)],
        calibration=OwnerCalibration(
            used=True,
            records_labelled=10,
            records_unsure=2,
            records_with_pii=4,
            folds={"probes": 3},
            target_false_positive_rate=0.05,
            fused_cutoffs={"PERSON": 0.5},
            held_out_recall=0.6,
            held_out_false_positive_rate=0.04,
            per_type={},
            aligned_to=value,
            loaded_from=value,
        ),
        expected_quality=[benchmark_quality(value, 0.6, 0.03)],
        coverage=Coverage(
            records_in_collection=10,
            records_attacked=10,
            records_carried_over=0,
            fast_tier_sample=1.0,
            deep_attacks=[value],
            deep_records=1,
            deep_flagged_by_fast=1,
            deep_flagged_covered=1,
        ),
    )


class Rendered(HTMLParser):
    """The HTML markdown-it makes of report.md: its tags, headings, table shapes and the text of each element."""

    def __init__(self, markdown: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.headings: list[tuple[str, str]] = []
        self.tables: list[list[int]] = []  # cells per row, header row first
        self.code: list[str] = []
        self.cells: list[str] = []
        self.text: list[str] = []
        self._open: list[tuple[str, list[str]]] = []
        self.feed(MARKDOWN.render(markdown))
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append(0)
        elif tag in ("td", "th"):
            self.tables[-1][-1] += 1
        self._open.append((tag, []))

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            name, parts = self._open.pop()
            content = "".join(parts)
            if self._open:
                self._open[-1][1].append(content)
            if name == tag:
                break
        else:
            return
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.headings.append((tag, content))
        elif tag == "code":
            self.code.append(content)
        elif tag in ("td", "th"):
            self.cells.append(content)

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._open:
            self._open[-1][1].append(data)

    @property
    def tag_names(self) -> set[str]:
        return {name for name, _ in self.tags}

    @property
    def body(self) -> str:
        return "".join(self.text)


def assert_same_structure(hostile: Rendered, plain: Rendered) -> None:
    """Same elements, same headings (the first names the collection), same tables, row for row."""
    assert hostile.tag_names <= plain.tag_names, hostile.tag_names - plain.tag_names
    assert not {"img", "script", "a", "iframe", "style"} & hostile.tag_names
    assert all(not attr.startswith("on") for _, attrs in hostile.tags for attr in attrs)
    assert [level for level, _ in hostile.headings] == [level for level, _ in plain.headings]
    assert hostile.headings[1:] == plain.headings[1:]
    assert hostile.headings[0][1].startswith("vdbguard scan: ")
    assert hostile.tables == plain.tables
    for rows in hostile.tables:
        assert all(cells == rows[0] for cells in rows), rows


def test_hostile_store_values_add_no_markup_and_stay_readable(tmp_path: Path) -> None:
    plain = Rendered(render_markdown(report_with(PLAIN)))
    assert "2 of them set no cutoff" in render_markdown(report_with(PLAIN))
    assert {"h1", "h2", "table", "code", "strong", "ul"} <= plain.tag_names
    for value, readable in HOSTILE.items():
        [path] = write_reports(report_with(value), tmp_path, ["md"])
        hostile = Rendered(path.read_text())
        assert_same_structure(hostile, plain)
        assert hostile.headings[0][1] == f"vdbguard scan: {readable} ({readable})", value
        assert_readable(hostile, readable)


def test_masked_values_keep_their_mask_and_read_as_masked() -> None:
    """Masking happens before the writer; the asterisks a mask writes must not turn into emphasis."""
    markdown = render_markdown(report_with(PLAIN, masked=True, recovered="John Smith"))
    rendered = Rendered(markdown)
    assert rendered.code.count("J*** S****") == 3  # the evidence, the recovered words, the inferred attribute
    assert "John" not in markdown and "Smith" not in markdown
    assert "em" not in rendered.tag_names
    assert "Warning:" not in markdown
    unmasked = Rendered(render_markdown(report_with(PLAIN, masked=False, recovered="John Smith")))
    assert unmasked.code.count("John Smith") == 3
    assert "Warning: this report shows recovered PII unmasked" in unmasked.body


MARKDOWN_HEAVY = st.text(alphabet=st.sampled_from(list("`<>&|\\[]()!*_~$#-+=.:1a \r\n\t\x00\u2028\u202e")))


def assert_readable(rendered: Rendered, readable: str) -> None:
    """Record ids, collection, location, embedder, field, recovered value, word and attribute, calibration
    paths: 11 code spans holding the value as it reads. Prose (a PII type, the attack's description, the
    problem, the benchmark's source): 4 table cells holding just that text, trimmed as GFM trims cells."""
    assert rendered.code.count(readable) >= 11, (readable, rendered.code)
    assert rendered.cells.count(readable.strip(" ")) >= 4, (readable, rendered.cells)


@settings(max_examples=150, deadline=None)
@given(value=st.one_of(st.text(), MARKDOWN_HEAVY))
def test_any_value_leaves_the_report_structure_unchanged(value: str) -> None:
    plain = Rendered(render_markdown(report_with(PLAIN)))
    hostile = Rendered(render_markdown(report_with(value)))
    assert_same_structure(hostile, plain)
    readable = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in value)
    if readable:
        assert_readable(hostile, readable)
