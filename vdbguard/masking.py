"""Masking so that vdbguard's own reports and logs do not become the leak."""

from __future__ import annotations

import re

_ALPHA = re.compile(r"[^\W\d_]+")
_DIGITS = re.compile(r"\d")


def mask(value: str) -> str:
    """Keep each word's first letter and the punctuation; hide every other letter and every digit.

    ``"John Smith" -> "J*** S****"``, ``"123-45-6789" -> "***-**-****"``: enough for a reviewer to
    tell which field leaked, not enough to read it.
    """
    masked = _ALPHA.sub(lambda m: m.group()[0] + "*" * (len(m.group()) - 1), value)
    return _DIGITS.sub("*", masked)


def mask_if(value: str, enabled: bool) -> str:
    return mask(value) if enabled else value
