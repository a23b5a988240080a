"""The two escapes report.md is built with: safe for any value, and still plain to read in the raw file."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from vdbguard.reports.markdown import code_span, escape_text, visible

CODE_SPANS = [  # a code span's fence outlasts any backtick run in the value
    ("doc-1", "`doc-1`"),
    ("J*** S****", "`J*** S****`"),
    ("a`b", "``a`b``"),
    ("a``b`", "``` a``b` ```"),
    (" padded ", "`  padded  `"),
    ("   ", "`   `"),
    ("two\nlines", "`two\\nlines`"),
    ("", '""'),
]
ESCAPED_TEXT = [  # escape_text escapes only what markdown would read
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
]


@pytest.mark.parametrize(
    ("escape", "value", "written"),
    [(code_span, *row) for row in CODE_SPANS] + [(escape_text, *row) for row in ESCAPED_TEXT],
)
def test_each_escape_writes_a_value_as_report_md_must(escape: Callable[[str], str], value: str, written: str) -> None:
    """Both escapes share one check, so one test: the value comes out exactly as written here."""
    assert escape(value) == written


def test_visible_writes_every_non_printing_character_as_its_escape() -> None:
    assert visible("plain text, ünïcode ✓") == "plain text, ünïcode ✓"
    assert visible("a\tb\x00c\u2028d\u202ee\xa0f") == "a\\tb\\x00c\\u2028d\\u202ee\\xa0f"
