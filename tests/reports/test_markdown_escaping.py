"""The two escapes report.md is built with: safe for any value, and still plain to read in the raw file."""

from __future__ import annotations

import pytest

from vdbguard.reports.markdown import code_span, escape_text, visible


@pytest.mark.parametrize(
    ("value", "span"),
    [
        ("doc-1", "`doc-1`"),
        ("J*** S****", "`J*** S****`"),
        ("a`b", "``a`b``"),
        ("a``b`", "``` a``b` ```"),
        (" padded ", "`  padded  `"),
        ("   ", "`   `"),
        ("two\nlines", "`two\\nlines`"),
        ("", '""'),
    ],
)
def test_code_span_fence_outlasts_any_backtick_run(value: str, span: str) -> None:
    assert code_span(value) == span


@pytest.mark.parametrize(
    ("value", "escaped"),
    [
        ("EMAIL_ADDRESS", "EMAIL_ADDRESS"),
        ("bag-of-words: has NaN values (3 of 4)!", "bag-of-words: has NaN values (3 of 4)!"),
        ("_em_ *strong* ~del~ $x$", "\\_em\\_ \\*strong\\* \\~del\\~ \\$x\\$"),
        ("<b>&amp;</b>", "\\<b\\>\\&amp;\\</b\\>"),
        ("[x](y) `z` a|b \\", "\\[x\\](y) \\`z\\` a\\|b \\\\"),
        ("# h", "\\# h"),
        ("- item", "\\- item"),
        ("+ item", "\\+ item"),
        ("12) item", "12\\) item"),
        ("  3. item", "  3\\. item"),
        ("a\r\nb", "a\\\\r\\\\nb"),
    ],
)
def test_escape_text_escapes_only_what_markdown_would_read(value: str, escaped: str) -> None:
    assert escape_text(value) == escaped


def test_visible_writes_every_non_printing_character_as_its_escape() -> None:
    assert visible("plain text, ünïcode ✓") == "plain text, ünïcode ✓"
    assert visible("a\tb\x00c\u2028d\u202ee\xa0f") == "a\\tb\\x00c\\u2028d\\u202ee\\xa0f"
